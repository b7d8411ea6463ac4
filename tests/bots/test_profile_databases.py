"""A profile's own database answers in its channels and nowhere else, in both channels
(issue 24 item 1): ``[[profiles]] database = {...}`` through the real Slack and Teams bots,
the model being the fake Messages API."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.llm.testing import FakeAnthropic, Reply
from bots.serving import Config, agent_factory, load_config
from tests.bots.slack.harness import running_bot
from tests.bots.teams.harness import MEMBER, teams_bot

LEDGER = "SELECT entry FROM ledger"
FINANCE_CHANNEL = "19:finance@thread.tacv2"


def database(path: Path, table: str, value: str) -> str:
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {table} (entry TEXT)")
        db.execute(f"INSERT INTO {table} VALUES (?)", (value,))
    return f"sqlite:///{path}"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for name in ("THREADLINE_APP", "ANTHROPIC_API_KEY", "THREADLINE_DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def configured(folder: Path, claude: FakeAnthropic) -> Config:
    shop = database(folder / "shop.db", "orders", "order-default")
    ledger = database(folder / "ledger.db", "ledger", "entry-finance-only")
    (folder / "threadline.toml").write_text(
        f'[llm]\napi_key = "sk-ant-test"\nbase_url = "{claude.base_url}"\n'
        f'[database]\nurl = "{shop}"\n'
        f'[[profiles]]\nname = "fin"\nslack_channels = ["CFIN"]\n'
        f'teams_channels = ["{FINANCE_CHANNEL}"]\ndatabase = {{ url = "{ledger}" }}\n',
        encoding="utf-8",
    )
    return load_config(argparse.Namespace(command="slack", config=None, app=None))


def started(served: Any) -> Any:
    """``served`` once every agent's database has been checked and read."""
    for agent in served.served_agents():
        enhancer = agent.llm_context_enhancer
        assert enhancer.source.started.wait(30)
    return served


def mention(channel: str, ts: str) -> dict[str, Any]:
    text = "<@UBOT> what is in the ledger?"
    return {"type": "app_mention", "user": "U1", "text": text, "ts": ts, "channel": channel}


def answers_of(claude: FakeAnthropic) -> tuple[str, str]:
    """What the model was shown (system prompts) and told (tool results), in order."""
    prompts = json.dumps([r.body.get("system") for r in claude.requests])
    results = json.dumps([r.body["messages"][-1] for r in claude.requests])
    return prompts, results


async def test_slack_a_profiles_database_answers_in_its_channel_only(folder: Path) -> None:
    async with FakeAnthropic() as claude:
        config = configured(folder, claude)

        def build(resolver: Any, state: Any) -> Any:
            return started(agent_factory(config, "slack")(state, resolver))

        async with running_bot(folder, [], agent_factory=build) as h:
            claude.queue(Reply.tool("run_sql", {"sql": LEDGER}), Reply.text("One entry."))
            await h.event(mention("CFIN", "1.0"))
            await h.idle()
            in_finance = answers_of(claude)
            claude.queue(Reply.tool("run_sql", {"sql": LEDGER}), Reply.text("None."))
            await h.event(mention("C1", "2.0"))
            await h.idle()
            everywhere = answers_of(claude)
            for served in h.agent.served_agents():  # type: ignore[attr-defined]
                await served.llm_service.aclose()
    assert "entry-finance-only" in in_finance[1] and "ledger" in in_finance[0]
    later_results = everywhere[1][len(in_finance[1]) :]
    assert "entry-finance-only" not in later_results and "no such table" in later_results
    assert "ledger" not in everywhere[0][len(in_finance[0]) :]


async def test_teams_a_profiles_database_answers_in_its_channel_only(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeAnthropic() as claude:
        config = configured(folder, claude)

        def build(resolver: Any, settings: Any) -> Any:
            from agent_core.state_factory import StateSettings, build_state

            state = build_state(StateSettings(ephemeral=True))
            return started(agent_factory(config, "teams")(state, resolver))

        async with teams_bot(monkeypatch, agent_factory=build) as bot:
            claude.queue(Reply.tool("run_sql", {"sql": LEDGER}), Reply.text("One entry."))
            finance = bot.message("what is in the ledger?", kind="channel", user=MEMBER)
            finance["channelData"]["channel"] = {"id": FINANCE_CHANNEL}
            finance["conversation"]["id"] = f"{FINANCE_CHANNEL};messageid=1700000000001"
            await bot.post(finance)
            await bot.final()
            in_finance = answers_of(claude)
            claude.queue(Reply.tool("run_sql", {"sql": LEDGER}), Reply.text("None."))
            await bot.post(bot.message("what is in the ledger?", kind="channel", user=MEMBER))
            await bot.final(count=2)
            everywhere = answers_of(claude)
            for served in bot.agent.served_agents():  # type: ignore[attr-defined]
                await served.llm_service.aclose()
    assert "entry-finance-only" in in_finance[1] and "ledger" in in_finance[0]
    later_results = everywhere[1][len(in_finance[1]) :]
    assert "entry-finance-only" not in later_results and "no such table" in later_results
