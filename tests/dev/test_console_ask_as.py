"""Ask as a chosen person and group, in the console and the terminal chat (issue 24 item 5):
the questions run as the data identity that person would get, so a team sees the rows each
role gets before rollout."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from rich.console import Console as RichConsole

from adapters.notices import SHARED_PRIVATELY
from agent_core import ScriptedLlmService, ScriptedResponse
from agent_core.database.settings import DatabaseConfig
from agent_core.users import OUTSIDER_REFUSAL
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.dev.app import create_app
from bots.dev.chat import ChatSession
from bots.dev.identity import ConsoleUserResolver
from bots.dev.turns import ConsoleOptions
from tests.dev.conftest import Console

QUESTION = "SELECT region FROM sales"


def region_database(path: Path, region: str) -> str:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sales (region TEXT)")
        db.execute("INSERT INTO sales VALUES (?)", (region,))
    return f"sqlite:///{path}"


def agent(tmp_path: Path) -> Any:
    eu = region_database(tmp_path / "eu.db", "EU")
    us = region_database(tmp_path / "us.db", "US")
    script = ScriptedLlmService([ScriptedResponse.tool("run_sql", {"sql": QUESTION}), "Done."] * 3)
    return build_demo_agent(
        DemoSettings(
            data_dir=tmp_path,
            database=DatabaseConfig(url=us, urls={"emea": eu, "user:ana@example.com": eu}),
            llm_service=script,
            user_resolver=ConsoleUserResolver(),
        )
    )


def regions(agent: Any) -> list[str]:
    """What each run_sql returned, as the model was told (newest last)."""
    results = [m.content or "" for r in agent.llm_service.requests for m in r.messages]
    return [line for text in results for line in text.splitlines() if line in ("EU", "US")]


async def test_the_console_asks_as_the_chosen_groups_and_email(tmp_path: Path) -> None:
    served = agent(tmp_path)
    app = create_app(served, options=ConsoleOptions(pace=0.0))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        console = Console(client)
        base = {"user_id": "U0SAM", "name": "Sam", "place": "dm"}
        await console.ask("regions?", {**base, "groups": ["user", "emea"]}, thread="1.1")
        await console.ask("regions?", {**base, "groups": ["user"]}, thread="1.2")
        await console.ask(
            "regions?", {**base, "groups": ["user"], "email": "ana@example.com"}, thread="1.3"
        )
    assert regions(served) == ["EU", "US", "EU"]


def test_the_terminal_chat_asks_as_a_person_and_groups(tmp_path: Path) -> None:
    out = io.StringIO()
    chat = ChatSession(agent(tmp_path), RichConsole(file=out), tmp_path)
    assert chat.command("/as ana@example.com,emea") is None
    assert (chat.persona.email, chat.persona.groups) == ("ana@example.com", ["user", "emea"])
    assert "Now asking as ana@example.com, groups: user, emea" in out.getvalue()
    assert chat.command("/as not-an-email@,x@y") is None  # two emails: told, not crashed
    assert chat.command("/admin") is None and chat.persona.email is None


async def test_the_console_asks_as_an_external_person_and_in_a_shared_channel(
    tmp_path: Path,
) -> None:
    """Issue 35: a team sees before rollout what a person of another organisation gets (one
    sentence, nothing runs) and what a channel shared with one shows (one line; the answer
    to the asker alone)."""
    served = agent(tmp_path)
    app = create_app(served, options=ConsoleOptions(pace=0.0))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        console = Console(client)
        xe = {"user_id": "U0XE", "name": "Xe", "place": "channel", "groups": ["external"]}
        refused = await console.ask("regions?", xe, thread="2.1")
        assert OUTSIDER_REFUSAL in json.dumps(refused.events) and regions(served) == []
        ana = {"user_id": "U0ANA", "name": "Ana", "place": "shared", "groups": ["user"]}
        shared = await console.ask("regions?", ana, thread="2.2")
        messages = list(shared.slack_messages().values())
        public = [m for m in messages if not m.get("ephemeral_to")]
        assert SHARED_PRIVATELY in json.dumps(public) and "Done." not in json.dumps(public)
        assert "Done." in json.dumps([m for m in messages if m.get("ephemeral_to")])
