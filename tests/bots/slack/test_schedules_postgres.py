"""Scheduled questions and alerts run with their owner's data access, through the real
Slack bot on a real PostgreSQL whose roles and row-level-security policies decide each
person's rows (issues 24 and 27). The owner is mapped by their workspace group; the
database's own login may read nothing, so a run as the service account would fail loudly.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.database.access import DataAccess
from agent_core.database.settings import DatabaseConfig
from agent_core.llm.scripted import ScriptedResponse
from agent_core.schedules.testing import ManualClock
from agent_core.state_factory import State
from agent_core.tools.sql import RunSqlTool
from tests.bots.slack.test_schedules import MONDAY_9, dms, markers, scheduling_bot
from tests.support.postgres_identity import Warehouse

pytestmark = pytest.mark.postgres

ACCOUNTS = "SELECT account FROM accounts ORDER BY account"
RULE = {"sql": "SELECT count(*) AS accounts FROM accounts", "column": "accounts"}


def warehouse_agent(warehouse: Warehouse, llm: ScriptedLlmService) -> Callable[..., Agent]:
    """An agent whose ``run_sql`` maps Slack's ``analysts`` group to ``sales_reader`` (the
    policy shows each person their own accounts) and refuses anyone else."""
    config = DatabaseConfig(
        url=warehouse.url, roles={"analysts": "sales_reader"}, unmapped="refuse"
    )

    def build(resolver: UserResolver, state: State) -> Agent:
        registry = ToolRegistry()
        registry.register_local_tool(RunSqlTool(DataAccess(config)), access_groups=[])
        return Agent(
            llm_service=llm,
            tool_registry=registry,
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
            conversation_store=state.conversations,
        )

    return build


def last_prompt(llm: ScriptedLlmService) -> str:
    return json.dumps([m.model_dump(mode="json") for m in llm.requests[-1].messages])


async def test_a_scheduled_alert_and_question_see_only_their_owners_rows(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """Ana sees one of the four accounts: her alert's value and her scheduled answer say
    1 and acct-ana-slack, never the others'."""
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("alert_rule", {**RULE, "operator": ">=", "threshold": 1}),
            "Explained.",
            ScriptedResponse.tool("run_sql", {"sql": ACCOUNTS}),
            "Here are your accounts.",
        ]
    )
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    agent: Any = warehouse_agent(warehouse, llm)
    async with scheduling_bot(tmp_path, clock=clock, agent=agent) as bot:
        draft = await bot.schedule("every day 9:00 when I have any accounts")
        assert "accounts &gt;= 1 (now: 1" in draft  # on her rows: 1 of 4 (escaped for Slack)
        (alert,) = await bot.harness.bot.schedules.store.every()
        await bot.click(f"/resume {alert.id}")
        await bot.at(MONDAY_9)
        assert "(the value is 1)" in last_prompt(llm)
        await bot.harness.bot.schedules.store.remove(alert.id)

        await bot.schedule("every day 10:00 list my accounts")
        await bot.at(MONDAY_9 + dt.timedelta(hours=1))
        said = json.dumps([call.args for call in bot.fake.calls_to("chat.postMessage")])
        assert "acct-ana-slack" in said
        assert "acct-bo-slack" not in said and "teams" not in said
        assert len(markers(bot.fake)) == 2


async def test_an_owner_who_lost_data_access_gets_it_paused_and_is_told_once(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """Ana leaves the group the database maps: her alert pauses at its next run, she hears
    once, and nothing runs as anyone else (no query, no post) at the runs after."""
    rule = {**RULE, "operator": "<", "threshold": 100}
    llm = ScriptedLlmService([ScriptedResponse.tool("alert_rule", rule)], then="Explained.")
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    agent: Any = warehouse_agent(warehouse, llm)
    async with scheduling_bot(tmp_path, clock=clock, agent=agent) as bot:
        await bot.schedule("every hour when I have fewer than 100 accounts")
        (alert,) = await bot.harness.bot.schedules.store.every()
        await bot.click(f"/resume {alert.id}")
        await bot.at(MONDAY_9)
        assert len(markers(bot.fake)) == 1  # 1 < 100: fired, as Ana
        bot.fake.usergroups = [{"id": "S1", "handle": "analysts", "users": ["UADMIN"]}]
        await bot.harness.event({"type": "subteam_members_changed", "subteam_id": "S1"})
        calls = len(llm.requests)
        for hour in (1, 2, 3):
            await bot.at(MONDAY_9 + dt.timedelta(hours=hour))
        kept = await bot.harness.bot.schedules.store.get(alert.id)
        assert kept is not None and kept.status == "paused"
        (told,) = dms(bot.fake, "U1")
        assert "no longer have data access" in told and f"/resume {alert.id}" in told
        assert len(markers(bot.fake)) == 1 and len(llm.requests) == calls
