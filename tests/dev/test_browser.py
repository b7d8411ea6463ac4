"""The console in real headless Chromium: `threadline dev` as a newcomer meets it.

One console process (as a person starts it) serves every test; each test opens its own
page. Covered: the first answer in both channels (Microsoft's Adaptive Cards renderer out of
the box, Slack's status seen, no raw markdown mid-stream, one answer order, the same numbers,
native charts with their title once), a turn's plan in both channels, Slack's suggested
prompts and the starter view on an empty send, the Slack / Teams views, an admin's private
detail, feedback, Stop marked in both channels, an approval decided by the persona who
clicks, layouts that hold for any input, refusals in the server's words, the payloads pane.
Every Adaptive Card a page drew is then parsed by
Microsoft's renderer (the shipped bundle), which must report no warning. Screenshots go to
``artifacts/screenshots/``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.demo_shop import top_customer

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION = "Who are our top customers by revenue?"
SLACK, TEAMS = ".slack-pane .thread:not([hidden])", ".teams-pane .thread:not([hidden])"
STREAMING = ".slack-pane .msg.streaming .bk-markdown"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
        "chromium-driver)",
    ),
]


@dataclass
class RunningConsole:
    url: str
    log: Path
    data_dir: Path

    def logged(self) -> str:
        return self.log.read_text()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    """`threadline dev --port 0` in its own process, as a person would start it; what it
    logs goes to a file the tests read."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    folder = tmp_path_factory.mktemp("console")
    with running_console(folder, ["--scripted", "--stream-delay", "0.05"], env) as console:
        yield console


@contextmanager
def running_console(
    folder: Path, options: list[str], env: dict[str, str]
) -> Iterator[RunningConsole]:
    """`threadline dev --port 0 OPTIONS --data-dir FOLDER/data` in its own process, until
    the block ends; its stderr in FOLDER/stderr.log."""
    log = folder / "stderr.log"
    command = ["-m", "bots.cli", "dev", "--port", "0", *options]
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, *command, "--data-dir", str(folder / "data")],
            cwd=ROOT,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    try:
        assert match, f"no URL printed: {line!r} {log.read_text()}"
        yield RunningConsole(match.group(1), log, folder / "data")
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()


def chrome(tmp_path: Path, width: int, height: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    size = f"--window-size={width},{height}"
    for flag in [*CHROME_FLAGS, size, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


class Page:
    """The console page, driven through what a person sees and clicks."""

    def __init__(self, driver: Any, name: str) -> None:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        self.d = driver
        self.name = name
        self.shots = 0
        self.expected_errors: list[str] = []
        # A streamed message is re-rendered as it grows: an element read mid-swap is
        # stale, which only means "look again".
        self._wait = WebDriverWait(
            driver, 20, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def until(self, condition: Callable[[Any], Any], what: str) -> Any:
        return self._wait.until(condition, message=f"timed out waiting for {what}")

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.d.find_elements(By.CSS_SELECTOR, selector))

    def one(self, selector: str) -> Any:
        return self.until(lambda d: (self.css(selector) or [None])[-1], selector)

    def text(self, selector: str) -> str:
        return " ".join(e.text for e in self.css(selector))

    def js(self, script: str, *args: Any) -> Any:
        return self.d.execute_script(script, *args)

    def shot(self, what: str) -> None:
        self.shots += 1
        self.d.save_screenshot(str(SCREENSHOTS / f"{self.name}-{self.shots:02d}-{what}.png"))

    def open(self, url: str) -> None:
        self.d.get(url)
        self.until(lambda d: self.js("return document.body.dataset.ready"), "the page")
        self.until(lambda d: "I answer questions" in self.text(f"{SLACK} .msg"), "the welcome")
        self.until(lambda d: self.css(f"{TEAMS} .ac-adaptiveCard"), "the Teams welcome card")
        self.idle()

    def ask(self, text: str) -> None:
        self.one("#input").send_keys(text + "\n")

    def idle(self) -> None:
        self.until(lambda d: not self.css("body.running"), "the turn to end")

    def click(self, selector: str, label: str | None = None) -> None:
        def find(_: Any) -> Any:
            found = [e for e in self.css(selector) if label is None or e.text.strip() == label]
            return found[-1] if found and found[-1].is_displayed() else None

        self.until(find, f"{selector} {label or ''}").click()

    def marks(self) -> dict[str, Any]:
        marks: dict[str, Any] = self.js("return window.__tl.marks")
        return marks

    def fits_the_window(self) -> bool:
        """Nothing sticks out sideways: the page does not scroll horizontally, and the
        input, Send and both panes are inside the window."""
        return bool(
            self.js("""
            const width = window.innerWidth;
            const inside = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                                      return r.left >= 0 && r.right <= width + 1; };
            return document.documentElement.scrollWidth <= width
                && inside('#input') && inside('#send') && inside('.teams-pane')
                && inside('.slack-pane');
        """)
        )


@pytest.fixture
def page(request: pytest.FixtureRequest, tmp_path: Path, console: RunningConsole) -> Iterator[Page]:
    width, height = getattr(request, "param", (1500, 1000))
    driver = chrome(tmp_path, width, height)
    try:
        shown = Page(driver, request.node.name.removeprefix("test_")[:40])
        shown.open(console.url)
        yield shown
        check_cards_with_microsofts_renderer(shown.js("return window.__tl.shownCards"), tmp_path)
        errors = [
            e
            for e in driver.get_log("browser")
            if e["level"] == "SEVERE"
            and not any(expected in e["message"] for expected in shown.expected_errors)
        ]
        assert not errors, errors
    finally:
        driver.quit()


WATCH_RAW_MARKDOWN = """
window.__raw = [];
new MutationObserver(() => {
  const live = '.msg.streaming .bk-markdown, .msg.streaming .teams-text';
  for (const el of document.querySelectorAll(live)) {
    if (el.textContent.includes('**')) window.__raw.push(el.textContent);
  }
}).observe(document.body, {subtree: true, childList: true, characterData: true});
"""


def test_a_first_answer_in_both_channels(page: Page, console: RunningConsole) -> None:
    assert page.js("return document.body.dataset.cards") == "official"  # no npm, no toast
    assert "I answer questions" in page.text(f"{TEAMS} .teams-text")
    page.shot("welcome")
    page.js(WATCH_RAW_MARKDOWN)
    page.ask(QUESTION)
    page.until(lambda d: "is running" in " ".join(page.marks()["statusesSeen"]), "a status")
    page.shot("status")
    page.until(lambda d: "Top 10 customers" in page.text(STREAMING), "streamed Slack text")
    page.shot("streaming")
    page.idle()
    page.shot("answered")

    # Slack's status lines were on screen, not replaced before a frame was drawn
    seen = page.marks()["statusesSeen"]
    assert "is running run_sql…" in seen and "is running visualize_data…" in seen
    # markdown never showed raw mid-stream ("**Evergreen" once did)
    assert page.js("return window.__raw") == []
    # one answer order: the text, then the table, then the chart, in both channels
    order = page.js(f"""return [...document.querySelectorAll('{SLACK} .msg.bot')].map(m =>
        m.querySelector('.bk-table') ? 'table' : m.querySelector('.bk-chart') ? 'chart'
        : m.querySelector('.bk-markdown') ? 'answer' : 'other')""")
    assert [kind for kind in order if kind != "other"][-3:] == ["answer", "table", "chart"]
    teams_answer = page.css(f"{TEAMS} .msg.bot")[-1]
    assert page.js(
        """const b = arguments[0].querySelector('.teams-message-body');
        return [...b.children].map(c => c.className.split(' ')[0])""",
        teams_answer,
    )[:3] == ["teams-ai-label", "teams-text", "teams-card"]
    # the same numbers in both channels
    _, revenue = top_customer(console.data_dir)  # the shop: the two years before this month
    assert revenue in page.text(f"{SLACK} .bk-table")
    assert revenue in page.text(f"{TEAMS} .teams-card")
    # native charts in both, their title said once per channel
    assert len(page.css(f"{SLACK} .bk-chart svg rect")) == 10
    assert len(page.css(f"{TEAMS} .teams-card .tl-chart svg rect")) == 10
    title = "Top 10 customers by revenue"  # it showed three times (image, file, comment)
    slack_chart = page.js(
        "return arguments[0].closest('.msg').innerText", page.one(f"{SLACK} .bk-chart")
    )
    teams_chart = page.js(
        "return arguments[0].closest('.teams-card').innerText", page.one(f"{TEAMS} .tl-chart")
    )
    assert slack_chart.count(title) == 1 and teams_chart.count(title) == 1
    # the terminal: one line for the turn, with who, what, how long and the tools
    page.until(lambda d: "run_sql, visualize_data" in console.logged(), "the turn's log line")
    assert re.search(
        r'Ana \(user, dm\) "Who are our top customers by revenue\?" -> done in '
        r"[\d.]+ s · tools run_sql, visualize_data",
        console.logged(),
    )


def test_a_plan_in_both_channels(page: Page) -> None:
    """Issue 13: a turn of several steps shows its plan, Slack's streamed plan (with its
    title, in a channel) and Teams' task list card."""
    page.click("#place-switch button", "# shop-analytics")
    page.ask(QUESTION)
    page.until(lambda d: page.css(f"{SLACK} .bk-plan-stream .bk-task"), "Slack's plan")
    page.shot("plan-running")
    page.idle()
    plan = page.one(f"{SLACK} .bk-plan-stream")
    assert plan.find_element("css selector", ".bk-plan-title").text == "Finished 2 steps"
    tasks = [t.text for t in plan.find_elements("css selector", ".bk-task-title")]
    assert tasks == ["2 steps at once", "run_sql", "visualize_data"]
    assert len(plan.find_elements("css selector", ".bk-task-complete")) == 3
    teams_answer = page.css(f"{TEAMS} .msg.bot")[-1]
    teams_plan = teams_answer.find_elements("css selector", ".teams-card")[0].text
    assert "Finished 2 steps" in teams_plan and "↳ ✅ visualize_data ·" in teams_plan
    page.js(
        "arguments[0].scrollIntoView(); arguments[1].scrollIntoView()",
        plan,
        teams_answer.find_elements("css selector", ".teams-card")[0],
    )
    page.shot("plan-done")


def test_suggested_prompts_and_the_starter_view(page: Page) -> None:
    prompts = page.css(f"{SLACK} .slack-prompts .slack-prompt")
    assert [p.text for p in prompts][:2] == [QUESTION, "Show the monthly revenue trend"]
    assert not page.css(f"{SLACK} .bk-actions")  # no longer buttons in a message
    page.shot("prompts")
    page.click(f"{SLACK} .slack-prompt", "Sales by category")
    page.until(lambda d: "Sales by category" in page.text(f"{SLACK} .msg.user"), "the click")
    page.idle()
    assert "Laptops" in page.text(f"{TEAMS} .teams-text")
    welcomes = page.text(f"{SLACK} .msg.bot").count("I answer questions")
    page.ask("")  # an empty Enter shows the starter view, as the README says
    page.until(
        lambda d: page.text(f"{SLACK} .msg.bot").count("I answer questions") == welcomes + 1,
        "a second welcome",
    )
    page.idle()
    page.shot("starter-again")
    # in a channel Slack has no suggested prompts: the questions are buttons
    page.click("#place-switch button", "# shop-analytics")
    page.until(lambda d: page.css(f"{SLACK} .bk-actions .bk-button"), "buttons in a channel")
    assert not [p for p in page.css(f"{SLACK} .slack-prompts") if p.is_displayed()]


def test_views_private_detail_and_feedback(page: Page) -> None:
    page.click("#view-switch button", "Slack")
    assert not page.css(".teams-pane")[0].is_displayed()
    page.shot("slack-view")
    page.click("#view-switch button", "Teams")
    assert not page.css(".slack-pane")[0].is_displayed()
    page.shot("teams-view")
    page.click("#view-switch button", "Side by side")

    # an admin in a shared channel: the detail only they may see, delivered privately
    page.click("#place-switch button", "# shop-analytics")
    page.until(lambda d: "I answer questions" in page.text(f"{SLACK} .msg"), "channel welcome")
    page.one("#persona option[value='1']").click()
    page.ask("Sales by category")
    page.idle()
    private_slack = page.text(f"{SLACK} .msg.private")
    assert "Only visible to you" in private_slack and "run_sql arguments" in private_slack
    # readable: the SQL on its own lines, no JSON escapes, no stray "json" line
    assert "FROM order_items oi" in private_slack and "\\n" not in private_slack
    assert not re.search(r"^json$", private_slack, re.MULTILINE)
    private_teams = page.text(f"{TEAMS} .msg.private")
    assert "1:1 chat" in private_teams and "run_sql arguments" in private_teams
    assert "run_sql arguments" not in page.text(f"{SLACK} .msg:not(.private)")
    page.shot("admin-in-channel")
    page.one("#persona option[value='0']").click()  # Ana must not see Alex's private detail
    assert all("not-for-you" in e.get_attribute("class") for e in page.css(".msg.private"))
    assert "run_sql arguments" not in page.text(f"{SLACK} .msg")
    assert "Only visible to Alex" in page.text(f"{SLACK} .msg.private")
    page.shot("private-hidden-from-others")
    page.one("#persona option[value='1']").click()

    page.css(f"{SLACK} [data-feedback='positive']")[-1].click()
    page.until(lambda d: "Feedback recorded: helpful" in page.text("#notice"), "Slack feedback")
    page.css(f"{TEAMS} [data-feedback='negative']")[-1].click()
    page.until(lambda d: "Feedback recorded: not helpful" in page.text("#notice"), "Teams feedback")
    marks = page.marks()["feedback"]
    assert [(m["channel"], m["positive"]) for m in marks] == [("slack", True), ("teams", False)]


def test_stop_is_marked_in_both_channels(page: Page) -> None:
    page.ask("Show the monthly revenue trend")
    page.until(lambda d: "Monthly revenue" in page.text(STREAMING), "the answer to stream")
    page.one("#stop").click()
    page.idle()
    assert "Stopped by Ana." in page.text(f"{SLACK} .console-note")
    assert "(Stopped.)" in page.css(f"{SLACK} .msg.bot .bk-markdown")[-1].text
    teams_texts = page.css(f"{TEAMS} .msg.bot .teams-text")
    assert teams_texts and "(Stopped.)" in teams_texts[-1].text  # Teams showed no mark
    page.shot("stopped")


@pytest.mark.parametrize("page", [(1000, 800)], indirect=True)
def test_no_input_breaks_the_layout(page: Page) -> None:
    """One long URL or unbroken word made the page ~5,700 px wide, pushing the input, Send
    and the Teams pane off screen."""
    assert page.fits_the_window()
    long_word = "x" * 3000
    url = "https://example.com/" + "a/" * 400 + "?q=" + "9" * 300
    page.ask(f"{long_word} {url}")
    page.idle()
    assert page.fits_the_window()
    page.shot("long-word")
    page.ask(QUESTION)  # a table wider than a narrow pane scrolls inside its message
    page.idle()
    assert page.fits_the_window()
    wide = f"{SLACK} .bk-table-wrap, {TEAMS} .teams-card"
    scrolls = page.js(f"""return [...document.querySelectorAll('{wide}')].map(el => {{
            const pane = el.closest('.pane').getBoundingClientRect();
            return el.getBoundingClientRect().right <= pane.right + 1; }})""")
    assert scrolls and all(scrolls)
    page.shot("narrow-table")


def test_refusals_are_shown_in_the_servers_words(page: Page, console: RunningConsole) -> None:
    """A 9,000-character message showed a raw `400 {"error": ...}` and the wrong hint
    "Is threadline dev still running?"; the server logged nothing."""
    page.expected_errors.append(
        "/api/turns - Failed to load resource: the server responded with a status of 400"
    )
    too_long = "y" * 40_001
    page.js("document.querySelector('#input').value = arguments[0]", too_long)
    page.one("#send").click()
    page.until(lambda d: page.marks()["errors"], "the refusal")
    [said] = page.marks()["errors"]
    assert said.startswith("This message is 40,001 characters long; the console takes at most")
    assert "still running" not in said
    assert page.js("return document.querySelector('#input').value.length") == 40_001
    # past the page's own check, the server refuses it in the same words, and logs it
    page.js("window.__tl.state.info.max_message = 1e9")
    page.one("#send").click()
    page.until(lambda d: len(page.marks()["errors"]) == 2, "the server's refusal")
    said = page.marks()["errors"][1]
    assert said == (
        "The console refused this message: the message is 40,001 characters long; "
        "the console takes at most 40,000 (as Slack does)."
    )
    assert page.js("return document.querySelector('#input').value.length") == 40_001  # kept
    assert not page.css(f"{SLACK} .msg.user")  # nothing shows as sent
    assert "POST /api/turns refused (400): the message is 40,001" in console.logged()
    note = page.css(f"{SLACK} .console-note.error")[-1]
    assert note.text == said and note.is_displayed()
    page.shot("refused")


def test_payloads_and_a_commands_answer(page: Page) -> None:
    page.ask("/help")
    page.idle()
    help_message = page.css(f"{TEAMS} .msg.bot")[-1]
    assert "Threadline commands" in help_message.text
    assert "AI generated" not in help_message.text  # a command's answer is not the model's
    page.one("#payloads").click()
    payload = page.css(f"{SLACK} .msg.bot .payload")[-1]
    payload.find_element("css selector", "summary").click()
    assert '"method": "chat.postMessage"' in payload.text
    page.until(lambda d: page.css("#components .component-row")[0].is_displayed(), "components")
    page.shot("payloads")


def check_cards_with_microsofts_renderer(cards: list[dict[str, Any]], folder: Path) -> None:
    """Parse every card the page drew with Microsoft's renderer: no warnings allowed."""
    assert shutil.which("node"), "node is needed to run Microsoft's Adaptive Cards parser"
    if not cards:
        return
    path = folder / "cards.json"
    path.write_text(json.dumps(cards, indent=1))
    result = subprocess.run(
        ["node", str(Path(__file__).with_name("check_cards.js")), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert reports[-1] == {"cards": len(cards), "failures": 0}, result.stdout + result.stderr
    assert result.returncode == 0


def test_answers_cite_their_sources_in_both_channels(page: Page) -> None:
    """Issue 13: the Slack answer ends with its tables and "Show query" (checked for whoever
    clicks, as the persona now selected); Teams lists each query as a citation, whose SQL
    opens from the reference for an admin in a personal chat."""
    page.click("#place-switch button", "# shop-analytics")
    page.until(lambda d: "I answer questions" in page.text(f"{SLACK} .msg"), "channel welcome")
    page.ask("Who are our top customers by revenue?")
    page.idle()
    assert "Sources:" in page.text(f"{SLACK} .msg:not(.private)")
    assert "SELECT" not in page.text(f"{SLACK} .msg") + page.text(f"{TEAMS} .msg")
    page.click(f"{SLACK} [data-slack-action='threadline_show_query']")
    page.until(
        lambda d: "Only people allowed" in page.text(f"{SLACK} .msg.private"), "the refusal to Ana"
    )
    page.one("#persona option[value='1']").click()
    page.click(f"{SLACK} [data-slack-action='threadline_show_query']")
    page.until(lambda d: "SELECT" in page.text(f"{SLACK} .slack-queries"), "the query to Alex")
    page.shot("slack-show-query")
    page.one("#persona option[value='0']").click()  # Ana does not see what Alex was shown
    assert "SELECT" not in page.text(f"{SLACK} .msg")

    page.one("#persona option[value='1']").click()
    page.click("#place-switch button", "Direct message")
    page.until(lambda d: "I answer questions" in page.text(f"{TEAMS} .msg"), "DM welcome")
    page.ask("Who are our top customers by revenue?")
    page.idle()
    assert "SQL query — " in page.text(f"{TEAMS} .teams-citations")
    page.click(f"{TEAMS} .teams-citation-content summary")
    page.until(lambda d: "SELECT" in page.text(f"{TEAMS} .teams-citation-content"), "the cited SQL")
    page.shot("teams-citation")


def attach(page: Page, path: Path) -> None:
    """Pick ``path`` with the composer's paperclip, and wait for its upload."""
    page.one("#file-input").send_keys(str(path))
    page.until(
        lambda d: path.name in page.text("#attachments .attachment:not(.uploading)"),
        f"the upload of {path.name}",
    )


def test_an_attached_file_is_a_table_in_both_channels(page: Page, tmp_path: Path) -> None:
    """Issue 13: a CSV attached to a question shows as a shared file in both channels and
    the answer queries it (``query_files``: a table in both); a corrupt XLSX is named in
    both channels in the bots' words, and the question is still answered."""
    sales = tmp_path / "sales.csv"
    sales.write_text("region,units,revenue\nEU,3,120.5\nUS,5,300\nAPAC,2,80\n")
    attach(page, sales)
    page.shot("attached")
    page.ask("what's in this file?")
    page.idle()
    assert not page.css("#attachments .attachment")  # sent with the question
    for pane in (SLACK, TEAMS):
        assert "sales.csv" in page.text(f"{pane} .msg.user .shared-file")
        assert "sales.csv is the table sales: 3 rows, 3 columns" in page.text(f"{pane} .msg.bot")
    assert "APAC" in page.text(f"{SLACK} .bk-table")
    assert "APAC" in page.text(f"{TEAMS} .teams-card")
    assert "query_files" in page.text(f"{SLACK} .msg.bot")  # the step, as Slack shows it
    page.shot("answered")

    book = tmp_path / "book.xlsx"
    book.write_bytes(b"PK\x03\x04 this is not a workbook")
    attach(page, book)
    page.ask("what's in this file?")
    page.idle()
    for pane in (SLACK, TEAMS):
        assert "book.xlsx" in page.text(f"{pane} .msg.user .shared-file")
        shown = page.text(f"{pane} .msg.bot")
        assert "Some files could not be read" in shown and "book.xlsx is not" in shown
        assert "I could not read the file you shared" in shown
    page.shot("corrupt")


def test_an_oversized_file_is_refused_in_the_bots_words(page: Page, tmp_path: Path) -> None:
    """Issue 13: a file over the files' limit (25 MB) is refused at upload, in the bots'
    words, and nothing is attached; the page sends at most the limit and a byte."""
    page.expected_errors.append(
        "/api/files?name=big.csv&user_id=U0ANA - Failed to load "
        "resource: the server responded with a status of 413"
    )
    big = tmp_path / "big.csv"
    with big.open("wb") as out:
        out.truncate(26 * 1024 * 1024)
    page.one("#file-input").send_keys(str(big))
    page.until(lambda d: page.marks()["errors"], "the refusal")
    assert page.marks()["errors"] == [
        "The console refused this file: big.csv is larger than "
        "25 MB, the most I read; share a smaller extract."
    ]
    assert not page.css("#attachments .attachment")
    page.shot("oversized")


def test_an_approval_decided_by_the_persona_who_clicks(page: Page) -> None:
    """Issue 25 in the console: Alex's refund waits in both channels; Ana's clicks are
    refused to her alone (Slack ephemeral, the Teams invoke's answer); Alex's click on the
    Teams card approves it, both messages show it in place, and the turn goes on."""
    page.click("#place-switch button", "# shop-analytics")
    page.until(lambda d: "I answer questions" in page.text(f"{SLACK} .msg"), "channel welcome")
    page.one("#persona option[value='1']").click()
    page.ask("Refund order 21, it arrived broken")
    page.idle()
    page.until(lambda d: "Waiting for approval" in page.text(f"{SLACK} .msg.bot"), "Slack ask")
    page.until(lambda d: "Waiting for approval" in page.text(f"{TEAMS} .msg.bot"), "Teams ask")
    page.shot("approval-asked")

    page.one("#persona option[value='0']").click()
    page.click(f"{SLACK} [data-slack-action='threadline_approval:approve']")
    page.idle()
    refusal = "Only Alex or an admin may approve this."
    page.until(lambda d: refusal in page.text(f"{SLACK} .msg.private"), "Slack's ephemeral")
    page.click(f"{TEAMS} .ac-pushButton", "Approve")
    page.idle()
    page.until(lambda d: refusal in page.text(f"{TEAMS} .teams-invoke-answer"), "Teams' answer")
    assert [a["decided"] for a in page.marks()["approvals"]] == [False, False]
    assert "Approved" not in page.text(f"{SLACK} .msg.bot") + page.text(f"{TEAMS} .msg.bot")
    page.shot("approval-refused")

    page.one("#persona option[value='1']").click()
    page.click(f"{TEAMS} .ac-pushButton", "Approve")
    page.idle()
    for pane in (SLACK, TEAMS):
        page.until(lambda d, p=pane: "Approved by Alex" in page.text(f"{p} .msg.bot"), pane)
        page.until(lambda d, p=pane: "Refunded order 21" in page.text(f"{p} .msg.bot"), pane)
    assert "Waiting for approval" not in page.text(f"{SLACK} .msg.bot")
    assert not page.css(f"{SLACK} [data-slack-action='threadline_approval:approve']")
    page.shot("approval-approved")


def test_an_approval_denied_and_one_stopped_in_both_channels(page: Page) -> None:
    """Deny on Slack's message and Stop on the Teams card: both messages say so in place,
    with no buttons left, and the turn goes on without running the tool."""
    page.ask("Refund order 22")
    page.idle()
    page.click(f"{SLACK} [data-slack-action='threadline_approval:deny']")
    page.idle()
    for pane in (SLACK, TEAMS):
        page.until(lambda d, p=pane: "Denied by Ana" in page.text(f"{p} .msg.bot"), pane)
        page.until(lambda d, p=pane: "not refund order 22" in page.text(f"{p} .msg.bot"), pane)
    page.shot("approval-denied")

    page.ask("Refund order 23")
    page.idle()
    page.click(f"{TEAMS} .ac-pushButton", "Stop")
    page.idle()
    for pane in (SLACK, TEAMS):
        page.until(lambda d, p=pane: "Stopped by Ana" in page.text(f"{p} .msg.bot"), pane)
    assert not page.css(f"{SLACK} [data-slack-action^='threadline_approval']")
    assert "Refunded order" not in page.text(f"{SLACK} .msg.bot")
    assert "nothing to add" not in page.text(f"{TEAMS} .msg.bot")  # the card says it all
    page.shot("approval-stopped")


def test_a_schedule_runs_now_in_both_channels(page: Page) -> None:
    """Issue 27: the console shows the schedules made in it and runs the next occurrence
    now, marked as scheduled in both channels."""
    page.ask("/schedule every weekday 9:00 Who are our top customers by revenue?")
    page.idle()
    page.until(lambda d: "Next runs" in page.text(f"{SLACK} .msg"), "the confirmation")
    page.one("#schedules-toggle").click()
    page.until(lambda d: "every weekday 9:00" in page.text("#schedule-rows"), "the listing")
    page.click("[data-fire]", "Run now")
    page.idle()
    page.until(lambda d: "Scheduled by @Ana" in page.text(f"{SLACK} .msg"), "Slack's marker")
    page.until(lambda d: "Scheduled by @Ana" in page.text(TEAMS), "Teams' marker")
    page.until(lambda d: ": posted" in page.text("#schedule-rows"), "the last run listed")
    assert page.fits_the_window()
    page.shot("schedule-run-now")


HOME_SLACK, HOME_TEAMS = ".slack-pane .home-view", ".teams-pane .home-view"


def test_home_and_a_workflow_step_from_the_console(page: Page) -> None:
    """Issue 40 in the console: Home shows the person's schedule in both panes (Slack's Home
    tab blocks, Teams' /home card), its buttons act as that person (Pause in Slack, Resume
    in Teams), a workflow step fired from the page says what Slack would be told, and a
    pending approval listed on Home is approved from there, in its thread."""
    page.ask("/schedule every weekday 9:00 Who are our top customers by revenue?")
    page.idle()
    page.click("#home-open")
    page.until(lambda d: "Run now" in page.text(HOME_SLACK), "the Slack Home tab")
    page.until(lambda d: page.css(f"{HOME_TEAMS} .ac-adaptiveCard"), "the Teams /home card")
    assert "Run now" in page.text(HOME_TEAMS)
    page.click(f"{HOME_SLACK} button", "Pause")
    page.until(lambda d: "Resume" in page.text(HOME_SLACK), "Resume after Pause (Slack)")
    page.until(lambda d: "Resume" in page.text(HOME_TEAMS), "the Teams card, published again")
    page.click(f"{HOME_TEAMS} button", "Resume")
    page.until(lambda d: "Pause" in page.text(HOME_TEAMS), "Pause after Resume (Teams)")
    page.shot("home")

    page.click("#step-fire")
    alert = page.until(lambda d: _alert(d), "the step's question prompt")
    alert.send_keys(QUESTION)
    alert.accept()
    page.until(lambda d: "functions.completeSuccess" in page.text(".console-note"), "the step")
    page.shot("workflow-step")

    page.ask("Refund order 24")  # Home lists it; its Approve is the thread's own decision
    page.idle()
    page.click("#home-open")
    page.until(lambda d: "Waiting for your approval" in page.text(HOME_SLACK), "Home's approval")
    page.click(f"{HOME_SLACK} button", "Approve")
    page.idle()
    for pane in (SLACK, TEAMS):
        page.until(lambda d, p=pane: "Approved by Ana" in page.text(f"{p} .msg.bot"), pane)
    page.until(lambda d: "Refunded order 24" in page.text(f"{SLACK} .msg.bot"), "the turn")
    page.until(lambda d: "Waiting for your approval" not in page.text(HOME_SLACK), "Home after")


def _alert(driver: Any) -> Any:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None
