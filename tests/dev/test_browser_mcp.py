"""A person's MCP sign-in in the console, in real headless Chromium: `threadline dev` with a
server each person signs in to (the tickets server behind its local authorization server).
The Connect button opens the real sign-in page in a new tab, the redirect comes back to the
console on this machine, and the console answers the question that waited, as its asker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dev.test_browser import (
    CHROMEDRIVER,
    CHROMIUM,
    SLACK,
    TEAMS,
    Page,
    chrome,
    running_console,
)
from tests.mcp.conftest import OAuthTickets, running_oauth_tickets

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="needs Debian's chromium and chromium-driver",
    ),
]


@pytest.fixture(scope="module")
def oauth() -> Iterator[OAuthTickets]:
    with running_oauth_tickets() as servers:
        yield servers


@pytest.fixture(scope="module")
def console_url(oauth: OAuthTickets, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("console-mcp")
    config = folder / "threadline.toml"
    config.write_text(f'[[mcp]]\nname = "tickets"\nurl = "{oauth.url}"\nauth = "user"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THREADLINE_"))}
    options = ["--config", str(config), "--app", "tests/dev/mcp_app.py:agent"]
    with running_console(folder, options, env) as console:
        yield console.url


def test_a_sign_in_comes_back_to_the_console_and_the_question_is_answered(
    console_url: str, oauth: OAuthTickets, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    driver = chrome(tmp_path, 1500, 1000)
    try:
        page = Page(driver, "mcp-sign-in")
        driver.get(console_url)
        page.until(lambda d: page.js("return document.body.dataset.ready"), "the page")
        page.idle()
        page.ask("whoami on tickets?")
        page.idle()
        link = page.one(f"{SLACK} a.bk-button")
        assert link.text == "Connect tickets"
        url = link.get_attribute("href")
        assert url.startswith(oauth.authorization.issuer + "/authorize?")
        assert page.css(f"{TEAMS} .ac-adaptiveCard")  # the Teams view's sign-in card
        console = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(url)  # the authorization server's own sign-in page
        page.until(lambda d: d.find_elements(By.NAME, "person"), "the sign-in page")
        driver.find_element(By.NAME, "person").send_keys("ana\n")
        page.until(lambda d: "Connected to tickets" in d.page_source, "the console's page")
        assert driver.current_url.startswith(console_url.rstrip("/") + "/oauth/mcp/callback?")
        page.shot("connected")
        driver.close()
        driver.switch_to.window(console)
        page.until(lambda d: "Tool said: ana" in page.text(f"{SLACK} .msg"), "the answer")
        page.idle()
        page.shot("answered")
        assert oauth.authorization.seen[-1] == "ana"
    finally:
        driver.quit()
