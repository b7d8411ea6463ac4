"""Scheduled questions and alerts run with their owner's data access, through the real
Teams bot on a real PostgreSQL whose roles and row-level-security policies decide each
person's rows (issues 24 and 27), the twin of Slack's test. Teams people are mapped by the
email the roster gives them; the database's own login may read nothing, so a run as the
service account would fail loudly.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.database.access import DataAccess
from agent_core.database.settings import DatabaseConfig
from agent_core.llm.scripted import ScriptedResponse
from agent_core.schedules.testing import ManualClock
from agent_core.tools.sql import RunSqlTool
from tests.bots.teams.harness import MEMBER
from tests.bots.teams.test_schedules import MONDAY_9, markers, scheduling_bot
from tests.support.postgres_identity import Warehouse

pytestmark = pytest.mark.postgres

ACCOUNTS = "SELECT account FROM accounts ORDER BY account"
RULE = {"sql": "SELECT count(*) AS accounts FROM accounts", "column": "accounts"}


async def test_a_scheduled_alert_and_question_see_only_their_owners_rows(
    monkeypatch: pytest.MonkeyPatch, warehouse: Warehouse
) -> None:
    """Ana (mapped by her email to ``sales_reader``) sees one of the four accounts: her
    alert's value and her scheduled answer say 1 and acct-ana-teams, never the others'."""
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("alert_rule", {**RULE, "operator": ">=", "threshold": 1}),
            "Explained.",
            ScriptedResponse.tool("run_sql", {"sql": ACCOUNTS}),
            "Here are your accounts.",
        ]
    )
    config = DatabaseConfig(
        url=warehouse.url,
        roles={f"user:{MEMBER}@contoso.com": "sales_reader"},
        unmapped="refuse",
    )

    def agent(resolver: UserResolver) -> Agent:
        registry = ToolRegistry()
        registry.register_local_tool(RunSqlTool(DataAccess(config)), access_groups=[])
        return Agent(
            llm_service=llm,
            tool_registry=registry,
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
        )

    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    async with scheduling_bot(monkeypatch, clock=clock, agent=agent) as bot:
        draft = await bot.say("/schedule every day 9:00 when I have any accounts")
        assert "(now: 1," in draft  # written on her rows: 1 of 4
        (alert,) = await bot.harness.host.schedules.store.every()
        await bot.click(f"/resume {alert.id}")
        await bot.at(MONDAY_9)
        prompt = json.dumps([m.model_dump(mode="json") for m in llm.requests[-1].messages])
        assert "(the value is 1)" in prompt
        await bot.harness.host.schedules.store.remove(alert.id)

        await bot.say("/schedule every day 10:00 list my accounts")
        await bot.at(MONDAY_9 + dt.timedelta(hours=1))
        posted = json.dumps([call.body for call in bot.fake.calls], ensure_ascii=False)
        assert "acct-ana-teams" in posted
        assert "acct-bo-teams" not in posted and "slack" not in posted
        assert len(markers(bot.fake)) == 2
