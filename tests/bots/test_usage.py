"""What each answer costs, through the real bots (issue 28, items 3 and 4).

``threadline slack`` / ``threadline teams``'s own agent wiring (``bots.serving.agent_factory``
from a ``threadline.toml``: the built-in agent, the real Anthropic client on the fake
Messages API, ``attach_usage``) inside the real Slack and Teams bots. A person over the
``[budgets]`` limit is refused in both channels with when it resets; the count survives a
restart (SQLite); an admin's ``/usage`` reports the calls and their cost; the Prometheus
counters and ``threadline usage`` report the same. Across two processes on Redis:
``tests/e2e/test_budget_processes.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.usage.prices import usd
from agent_core.usage.report import totals_text
from agent_core.users import UserResolver
from bots.cli import main
from bots.serving import Config, agent_factory, load_config
from bots.teams.settings import TeamsSettings
from bots.usage_metrics import watch_usage
from tests.bots.slack.harness import running_bot
from tests.bots.teams.harness import teams_bot

REFUSAL = "You have used your daily AI budget of 19 tokens; it resets at 00:00 UTC tomorrow"
"""The fake answers with 12 input and 7 output tokens: one answer uses the budget up."""


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    prefixes = ("SLACK_", "THREADLINE_", "ANTHROPIC_", "Microsoft", "TEAMS_", "REDIS", "AWS_")
    for name in [n for n in os.environ if n.startswith(prefixes)]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def configure(folder: Path, llm: FakeAnthropic, *, extra: str = "") -> Config:
    (folder / "threadline.toml").write_text(
        f"""
[llm]
api_key = "sk-ant-test"
base_url = "{llm.base_url}"
model = "claude-sonnet-5-5"

[state]
data_dir = "{folder / "data"}"

[[budgets.limits]]
scope = "person"
period = "day"
tokens = 19
{extra}
"""
    )
    return load_config(argparse.Namespace(command="slack", config=None, app=None))


def mention(text: str, ts: str, user: str = "U1") -> dict[str, object]:
    return {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


async def close_models(served: Any) -> None:
    for agent in served.served_agents():
        await agent.llm_service.aclose()


def slack_agent(config: Config) -> Any:
    build = agent_factory(config, "slack")
    return lambda resolver, state: build(state, resolver)


async def test_slack_refuses_a_person_over_budget_and_the_count_survives_a_restart(
    folder: Path,
) -> None:
    async with FakeAnthropic() as llm:
        config = configure(folder, llm)
        llm.queue(Reply.text("Within budget."))
        state = build_state(config.state)  # SQLite in the data directory
        async with running_bot(folder, [], agent_factory=slack_agent(config), state=state) as h:
            await h.event(mention("first question", "100.000100"))
            await h.idle()
            assert h.fake.thread("C1", "100.000100")[-1].text == "Within budget."
            await h.event(mention("second question", "200.000100"))
            await h.idle()
            refused = h.fake.thread("C1", "200.000100")
            assert any(REFUSAL in json.dumps(m.blocks) + m.text for m in refused), refused
            await close_models(h.agent)
        await state.aclose()
        assert len(llm.requests) == 1

        restarted = build_state(config.state)  # a new process on the same data directory
        async with running_bot(folder, [], agent_factory=slack_agent(config), state=restarted) as h:
            await h.event(mention("after a restart", "300.000100"))
            await h.idle()
            refused = h.fake.thread("C1", "300.000100")
            assert any(REFUSAL in json.dumps(m.blocks) + m.text for m in refused), refused
            await close_models(h.agent)
        await restarted.aclose()
        assert len(llm.requests) == 1  # neither refused question reached the model


async def test_teams_refuses_a_person_over_budget(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeAnthropic() as llm:
        config = configure(folder, llm)
        state = build_state(StateSettings(ephemeral=True))

        def teams_agent(resolver: UserResolver, settings: TeamsSettings) -> Any:
            return agent_factory(config, "teams")(state, resolver)

        llm.queue(Reply.text("Within budget."))
        async with teams_bot(monkeypatch, agent_factory=teams_agent, state=state) as bot:
            await bot.post(bot.message("first question"))
            assert "Within budget." in json.dumps((await bot.final()).body)
            await bot.post(bot.message("second question"))
            refusal = json.dumps((await bot.final(2)).body)
            assert REFUSAL in refusal, refusal
            await close_models(bot.agent)
        assert len(llm.requests) == 1
        summary = await state.usage.summary(*[state_day()] * 2)
        assert summary.total.calls == 1
        assert (summary.total.tokens.input, summary.total.tokens.output) == (12, 7)
        assert [r.key for r in summary.top("workspace")] == ["teams:" + tenant()]


def state_day() -> Any:
    import datetime as dt

    return dt.datetime.now(dt.UTC).date()


def tenant() -> str:
    from tests.adapters.teams import payloads

    return payloads.TENANT


async def test_usage_for_admins_metrics_and_the_command_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with FakeAnthropic() as llm:
        config = configure(folder, llm)
        llm.queue(Reply.text("Counted."))
        state: State = build_state(config.state)
        async with running_bot(folder, [], agent_factory=slack_agent(config), state=state) as h:
            watch_usage(h.bot.metrics.registry, state.usage)
            await h.event(mention("a question", "100.000100"))
            await h.idle()
            await h.event(mention("/usage", "200.000100", user="U2"))
            await h.idle()
            denied = json.dumps([m.blocks for m in h.fake.thread("C1", "200.000100")])
            assert "only available to administrators" in denied
            await h.event(mention("/usage", "300.000100", user="UADMIN"))
            await h.idle()
            report = json.dumps(
                [c.args for c in h.fake.calls if "300.000100" in json.dumps(c.args)]
            )
            today = await state.usage.summary(state_day(), state_day())
            assert totals_text(today.total) in report  # 12 input, 7 output, the cache write
            assert "in 1 call, cost $0.0" in report and "slack:T1:U1" in report
            metrics = generate_latest(h.bot.metrics.registry).decode()
            await close_models(h.agent)
        await state.aclose()
    assert 'threadline_llm_tokens_total{kind="input",model="claude-sonnet-5-5"} 12.0' in metrics
    assert 'threadline_llm_tokens_total{kind="output",model="claude-sonnet-5-5"} 7.0' in metrics
    cost = (
        f'threadline_llm_cost_usd_total{{model="claude-sonnet-5-5"}} {usd(today.total.cost_nano)}'
    )
    assert cost in metrics

    assert await asyncio.to_thread(main, ["usage", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["today"]["total_tokens"] == today.total.tokens.total
    assert printed["today"]["calls"] == 1 and printed["today"]["output"] == 7
    assert printed["today"]["cost_usd"] == round(usd(today.total.cost_nano), 6)
    assert printed["today"]["cost_known"]
    assert printed["top"]["person"][0]["key"] == "slack:T1:U1"
    assert await asyncio.to_thread(main, ["usage"]) == 0
    assert "Today (" in capsys.readouterr().out

    with sqlite3.connect(folder / "data" / "state.db") as db:
        (turn_id,) = db.execute("SELECT turn_id FROM llm_usage").fetchone()
    assert await asyncio.to_thread(main, ["usage", "--turn", turn_id, "--json"]) == 0
    one_turn = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert one_turn["calls"] == 1 and one_turn["output"] == 7


def test_config_shows_the_provider_settings_with_secrets_masked(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THREADLINE_LLM_PROVIDER", "foundry")
    monkeypatch.setenv("ANTHROPIC_FOUNDRY_API_KEY", "foundry-secret-key")
    monkeypatch.setenv("ANTHROPIC_FOUNDRY_RESOURCE", "acme")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-secret-key")
    assert main(["config", "--json"]) == 0
    rows = {
        row["setting"]: row for row in map(json.loads, capsys.readouterr().out.strip().splitlines())
    }
    assert rows["llm.provider"]["value"] == "foundry"
    assert rows["llm.provider"]["from"] == "environment THREADLINE_LLM_PROVIDER"
    assert rows["llm.foundry_resource"]["value"] == "acme"
    assert rows["llm.foundry_api_key"]["value"] == "********"
    assert rows["llm.bedrock_api_key"]["value"] == "********"
    assert "budgets.limits" in rows and "usage.prices" in rows
