"""``BotSchedules``: commands from a signed request (the asker resolved as for a turn, alerts
written with the data they may read there) and the dispatcher's lifecycle."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    RequestContext,
    ScriptedLlmService,
    ToolRegistry,
)
from agent_core.components import CardComponent, UiComponent
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse
from agent_core.schedules.commands import parse_command
from agent_core.schedules.dispatcher import DispatchReport
from agent_core.schedules.model import Place
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.testing import ManualClock
from agent_core.state_factory import StateSettings, build_state
from agent_core.tools.sql import RunSqlTool
from bots.schedules.checks import owner_context
from bots.schedules.service import BotSchedules
from tests.bots.schedules.support import Directory

FRIDAY = dt.datetime(2025, 3, 7, 12, 0, tzinfo=dt.UTC)
HERE = RequestContext(metadata={"platform": "slack", "user_id": "U1", "channel_id": "C1"})
PLACE = Place(thread_key="slack:T1:C1:9.0", stop_owner="T1:U1", context=dict(HERE.metadata))
RULE = {
    "sql": "SELECT count(*) AS orders FROM orders",
    "column": "orders",
    "operator": "<",
    "threshold": 100,
}


def text(reply: UiComponent) -> str:
    assert isinstance(reply.rich_component, CardComponent)
    return f"{reply.rich_component.title}\n{reply.rich_component.content}"


@pytest.fixture
def shop(tmp_path: Path) -> SqlAlchemyRunner:
    path = tmp_path / "shop.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1), (2);")
    db.close()
    return SqlAlchemyRunner.sqlite(path)


def served(llm: ScriptedLlmService, runner: SqlAlchemyRunner, directory: Directory) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(RunSqlTool(runner), access_groups=["analysts"])
    return Agent(
        llm_service=llm,
        tool_registry=registry,
        user_resolver=directory,
        agent_memory=InMemoryAgentMemory(),
    )


async def say(schedules: BotSchedules, line: str, timezone: str | None = "Europe/Paris") -> str:
    command = parse_command(line)
    assert command is not None
    reply = await schedules.command(
        command, HERE, place=PLACE, workspace="slack:T1", timezone=timezone
    )
    return text(reply)


async def test_an_alert_is_written_with_the_askers_data(shop: SqlAlchemyRunner) -> None:
    directory = Directory()
    llm = ScriptedLlmService([ScriptedResponse.tool("alert_rule", RULE)])
    state = build_state(StateSettings(ephemeral=True))
    schedules = BotSchedules(state, served(llm, shop, directory), clock=ManualClock.at(FRIDAY))
    shown = await say(schedules, "/schedule every hour when orders drop below 100")
    assert "orders < 100 (now: 2, so it holds)" in shown
    (draft,) = await state.schedules.owned_by("slack:T1:U1")
    assert draft.status == "draft" and draft.owner_name is None
    assert draft.place == PLACE and draft.recurrence.timezone == "Europe/Paris"

    directory.groups["U1"] = ["user"]  # not an analyst: no database to watch
    shown = await say(schedules, "/schedule every hour when orders drop below 100")
    assert "need a database" in shown and len(llm.requests) == 1


async def test_the_asker_is_resolved_and_an_unknown_zone_is_utc(shop: SqlAlchemyRunner) -> None:
    directory = Directory()
    state = build_state(StateSettings(ephemeral=True))
    schedules = BotSchedules(
        state, served(ScriptedLlmService([]), shop, directory), clock=ManualClock.at(FRIDAY)
    )
    shown = await say(schedules, "/schedule every day 9:00 revenue", timezone="Mars/Olympus")
    assert "(your time, UTC)" in shown
    del directory.groups["U1"]
    assert "verified Slack user" in await say(schedules, "/schedules")


async def test_the_dispatcher_runs_beside_the_worker_and_drains(shop: SqlAlchemyRunner) -> None:
    state = build_state(StateSettings(ephemeral=True))
    clock = ManualClock.at(FRIDAY)
    schedules = BotSchedules(state, served(ScriptedLlmService([]), shop, Directory()), clock=clock)
    ticks: asyncio.Queue[DispatchReport] = asyncio.Queue()
    schedules.dispatcher.on_tick = ticks.put_nowait
    await say(schedules, "/schedule every 15 minutes orders today")
    schedules.start()
    assert (await ticks.get()).total == 0
    await clock.sleeping()
    clock.advance(15 * 60)
    assert (await ticks.get()).enqueued == 1
    await schedules.drain()
    (delivery,) = await state.turns.fetch("test", 10, 0.01)
    occurrence = Occurrence.from_payload(delivery.payload)
    assert occurrence is not None and delivery.thread_key == PLACE.thread_key
    assert delivery.owner == PLACE.stop_owner
    (schedule,) = await state.schedules.owned_by("slack:T1:U1")
    context = owner_context(schedule)
    assert context.metadata["scheduled_by"] == schedule.id


async def test_quotas_and_usage_apply_when_an_alert_is_written(shop: SqlAlchemyRunner) -> None:
    """The model call that writes an alert is recorded (usage, budgets) and refused by the
    owner's quota, like a question."""
    from agent_core.state.quotas import MemoryRateLimiter, RateLimitHook
    from agent_core.usage.ledger import MemoryUsageLedger
    from agent_core.usage.recorder import UsageRecorder

    usage = {"input_tokens": 1200, "output_tokens": 80}
    llm = ScriptedLlmService([ScriptedResponse.tool("alert_rule", RULE, usage=usage)])
    ledger = MemoryUsageLedger()
    agent = served(llm, shop, Directory())
    agent.lifecycle_hooks.append(RateLimitHook(MemoryRateLimiter(), limit=1, window=3600))
    agent.llm_middlewares.append(UsageRecorder(ledger, model="claude-sonnet-5-5"))
    schedules = BotSchedules(
        build_state(StateSettings(ephemeral=True)), agent, clock=ManualClock.at(FRIDAY)
    )
    assert "Confirm this alert" in await say(schedules, "/schedule every hour when orders < 100")
    today = dt.datetime.now(dt.UTC).date()
    assert (await ledger.summary(today, today)).total.tokens.total == 1280
    refused = await say(schedules, "/schedule every hour when orders < 50")
    assert "reached your limit of 1 messages per hour" in refused
    assert len(llm.requests) == 1
