"""The console in real headless Chromium: `threadline dev` as a person uses it.

Two demo questions stream in with a table and a chart; the Slack / Teams views switch; an
admin in a channel sees the private detail only they get; feedback is recorded; Stop ends an
answer mid-stream. Every Adaptive Card the page showed is then parsed by Microsoft's
official renderer (npm ``adaptivecards``), which must report no warning. Screenshots go to
``artifacts/console/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CARDS_BUNDLE = ROOT / "bots" / "dev" / "node_modules" / "adaptivecards" / "dist"
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1500,1000",
]
QUESTION = "Who are our top customers by revenue?"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
        "chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`threadline dev --port 0` in its own process, as a person would start it."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bots.cli",
            "dev",
            "--port",
            "0",
            "--scripted",
            "--stream-delay",
            "0.05",
            "--data-dir",
            str(tmp_path_factory.mktemp("data")),
        ],
        cwd=ROOT,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    try:
        assert match, f"no URL printed: {line!r}"
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield browser
    finally:
        browser.quit()


class Page:
    """The console page, driven through what a person sees and clicks."""

    def __init__(self, driver: Any) -> None:
        from selenium.webdriver.support.ui import WebDriverWait

        self.d = driver
        self._wait = WebDriverWait(driver, 20, poll_frequency=0.05)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def until(self, condition: Callable[[Any], Any], what: str) -> Any:
        return self._wait.until(condition, message=f"timed out waiting for {what}")

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.d.find_elements(By.CSS_SELECTOR, selector))

    def one(self, selector: str) -> Any:
        return self.until(lambda d: (self.css(selector) or [None])[-1], selector)

    def text(self, selector: str) -> str:
        return " ".join(e.text for e in self.css(selector))

    def shot(self, name: str) -> None:
        self.d.save_screenshot(str(ARTIFACTS / f"{name}.png"))

    def ask(self, text: str) -> None:
        box = self.one("#input")
        box.send_keys(text + "\n")

    def idle(self) -> None:
        self.until(lambda d: not self.css("body.running"), "the turn to end")

    def click(self, selector: str, label: str | None = None) -> None:
        def find(_: Any) -> Any:
            found = [e for e in self.css(selector) if label is None or e.text.strip() == label]
            return found[-1] if found and found[-1].is_displayed() else None

        self.until(find, f"{selector} {label or ''}").click()


def test_console_in_a_real_browser(console_url: str, driver: Any) -> None:
    page = Page(driver)
    driver.get(console_url)
    page.until(lambda d: d.execute_script("return document.body.dataset.ready"), "the page")
    page.until(lambda d: "I answer questions" in page.text(".slack-pane .msg"), "the welcome")
    assert driver.execute_script("return document.body.dataset.cards") == "official"
    page.shot("01-welcome")

    # 1. a question: the answer streams, then a table and a chart in both channels
    page.ask(QUESTION)
    streaming = ".slack-pane .msg.streaming .bk-markdown"
    page.until(lambda d: "Top 10 customers" in page.text(streaming), "streamed Slack text")
    page.shot("02-streaming")
    page.idle()
    slack, teams = ".slack-pane .thread:not([hidden])", ".teams-pane .thread:not([hidden])"
    assert "Tidal Retail GmbH" in page.text(f"{slack} .bk-table")
    assert "Together they account for" in page.text(f"{slack} .msg")
    chart = page.one(f"{slack} .bk-file-image img")
    page.until(lambda d: d.execute_script("return arguments[0].naturalWidth", chart), "chart")
    assert "Tidal Retail GmbH" in page.text(f"{teams} .teams-card")
    teams_chart = page.one(f"{teams} .teams-card img")
    assert driver.execute_script("return arguments[0].naturalWidth", teams_chart) > 0
    page.shot("03-first-answer")

    # 2. a second question, by the suggestion button the Slack adapter rendered
    page.click(f"{slack} .bk-button", "Sales by category")
    page.until(lambda d: "Sales by category" in page.text(f"{slack} .msg.user"), "the click")
    page.idle()
    assert len(page.css(f"{slack} .bk-chart svg rect")) >= 6  # Slack's native chart
    assert "Laptops" in page.text(f"{teams} .teams-text")
    page.shot("04-second-answer")

    # 3. the Slack view, the Teams view, then both
    page.click("#view-switch button", "Slack")
    assert not page.css(".teams-pane")[0].is_displayed()
    page.shot("05-slack-view")
    page.click("#view-switch button", "Teams")
    assert not page.css(".slack-pane")[0].is_displayed()
    page.shot("06-teams-view")
    page.click("#view-switch button", "Side by side")

    # 4. an admin in a shared channel: the detail only they may see, delivered privately
    page.click("#place-switch button", "# shop-analytics")
    page.until(lambda d: "I answer questions" in page.text(f"{slack} .msg"), "channel welcome")
    page.one("#persona option[value='1']").click()
    page.ask("Sales by category")
    page.idle()
    private_slack = page.text(f"{slack} .msg.private")
    assert "Only visible to you" in private_slack and "run_sql arguments" in private_slack
    private_teams = page.text(f"{teams} .msg.private")
    assert "1:1 chat" in private_teams and "run_sql arguments" in private_teams
    assert "run_sql arguments" not in page.text(f"{slack} .msg:not(.private)")
    page.shot("07-admin-in-channel")
    page.one("#persona option[value='0']").click()  # Ana must not see Alex's private detail
    assert all("not-for-you" in e.get_attribute("class") for e in page.css(".msg.private"))
    assert "run_sql arguments" not in page.text(f"{slack} .msg")
    assert "Only visible to Alex" in page.text(f"{slack} .msg.private")
    driver.execute_script("arguments[0].scrollIntoView()", page.css(f"{slack} .msg.private")[0])
    driver.execute_script("arguments[0].scrollIntoView()", page.css(f"{teams} .msg.private")[0])
    page.shot("08-private-hidden-from-others")
    page.one("#persona option[value='1']").click()

    # 5. feedback, from each channel's own buttons
    page.css(f"{slack} [data-feedback='positive']")[-1].click()
    page.until(lambda d: "Feedback recorded: helpful" in page.text("#notice"), "Slack feedback")
    page.css(f"{teams} [data-feedback='negative']")[-1].click()
    page.until(lambda d: "Feedback recorded: not helpful" in page.text("#notice"), "Teams feedback")
    marks = driver.execute_script("return window.__tl.marks.feedback")
    assert [(m["channel"], m["positive"]) for m in marks] == [("slack", True), ("teams", False)]

    # 6. Stop in the middle of an answer
    page.ask("Show the monthly revenue trend")
    page.until(lambda d: "Monthly revenue" in page.text(streaming), "the answer to stream")
    page.one("#stop").click()
    page.idle()
    assert "Stopped by Alex." in page.text(f"{slack} .console-note")
    answers = page.css(f"{slack} .msg.bot .bk-markdown")
    assert "(Stopped.)" in answers[-1].text
    page.shot("09-stopped")

    # 7. the developer's view: raw payloads and the agent's components
    page.one("#payloads").click()
    payload = page.css(f"{slack} .msg.bot .payload")[-1]
    payload.find_element("css selector", "summary").click()
    assert '"method": "chat.stopStream"' in payload.text
    page.until(lambda d: page.css("#components .component-row")[0].is_displayed(), "components")
    assert "requester only" in page.text("#components")
    page.shot("10-payloads")

    check_cards_with_microsofts_renderer(driver.execute_script("return window.__tl.shownCards"))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def check_cards_with_microsofts_renderer(cards: list[dict[str, Any]]) -> None:
    """Parse every card the page drew with npm ``adaptivecards``: no warnings allowed."""
    assert CARDS_BUNDLE.is_dir(), "run `npm ci` in bots/dev (Microsoft's adaptivecards)"
    assert shutil.which("node"), "node is needed to run Microsoft's Adaptive Cards parser"
    assert len(cards) >= 8, cards
    path = ARTIFACTS / "cards.json"
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
