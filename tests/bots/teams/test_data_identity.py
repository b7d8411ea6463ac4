"""Data follows the asker, through the real Teams bot (issue 24), the twin of Slack's test:
signed activities into the CloudAdapter, the built-in agent over a real PostgreSQL whose
policies decide each person's rows, the real Anthropic client against the fake Messages API.

People are mapped by the email Teams' roster gives them, so the mapping is configuration.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_core.database.settings import DatabaseConfig
from agent_core.llm.testing import FakeAnthropic, Reply
from bots.demo.agent import DemoSettings, build_demo_agent
from tests.bots.teams.harness import ADMIN, MEMBER, TeamsHarness, teams_bot
from tests.support.postgres_identity import Warehouse

pytestmark = pytest.mark.postgres

ACCOUNTS = "SELECT account FROM accounts ORDER BY account"
BO = "aad-bo"


def mapping(warehouse: Warehouse) -> DatabaseConfig:
    return DatabaseConfig(
        url=warehouse.url,
        roles={
            f"user:{MEMBER}@contoso.com": "sales_reader",
            f"user:{BO}@contoso.com": "sales_reader",
            f"user:{ADMIN}@contoso.com": "finance_reader",
        },
        unmapped="refuse",
    )


@asynccontextmanager
async def data_bot(
    monkeypatch: pytest.MonkeyPatch,
    warehouse: Warehouse,
    tmp_path: Path,
    config: DatabaseConfig | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[TeamsHarness, FakeAnthropic]]:
    """The Teams bot serving the built-in agent on the warehouse, Claude being the fake."""
    async with FakeAnthropic() as claude:

        def build(resolver: Any, settings: Any) -> Any:
            agent = build_demo_agent(
                DemoSettings(
                    data_dir=tmp_path,
                    database=config or mapping(warehouse),
                    anthropic_api_key="sk-ant-test",  # type: ignore[arg-type]
                    anthropic_base_url=claude.base_url,
                    user_resolver=resolver,
                )
            )
            agent.llm_context_enhancer.source.started.wait(30)
            return agent

        async with teams_bot(monkeypatch, agent_factory=build, **settings) as bot:
            try:
                yield bot, claude
            finally:
                await bot.agent.llm_service.aclose()  # type: ignore[attr-defined]


def said(bot: TeamsHarness) -> list[str]:
    return [json.dumps(call.body) for call in bot.answers()]


async def test_two_people_in_one_thread_each_see_their_own_rows(
    monkeypatch: pytest.MonkeyPatch, warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(monkeypatch, warehouse, tmp_path) as (bot, claude):
        claude.queue(Reply.tool("run_sql", {"sql": ACCOUNTS}), Reply.text("Here."))
        await bot.post(bot.message("which accounts are mine?", kind="channel", user=MEMBER))
        await bot.final()
        claude.queue(Reply.tool("run_sql", {"sql": ACCOUNTS}), Reply.text("Here."))
        await bot.post(bot.message("and mine?", kind="channel", user=BO, user_name="Bo"))
        await bot.final(count=2)
        answers = [text for text in said(bot) if "acct-" in text]
        assert any("acct-ana-teams" in t and "acct-bo-teams" not in t for t in answers)
        assert any("acct-bo-teams" in t and "acct-ana-teams" not in t for t in answers)
        assert not any("acct-ana-teams" in t and "acct-bo-teams" in t for t in answers)
        results = [json.dumps(r.body["messages"][-1]) for r in claude.requests[1::2]]
        assert "acct-ana-teams" in results[0] and "acct-bo-teams" not in results[0]
        assert "acct-bo-teams" in results[1] and "acct-ana-teams" not in results[1]


async def test_the_finance_tables_never_reach_a_sales_reps_llm_request(
    monkeypatch: pytest.MonkeyPatch, warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(monkeypatch, warehouse, tmp_path) as (bot, claude):
        claude.queue(Reply.text("Noted."))
        await bot.post(bot.message("what do we pay people?", user=MEMBER))
        await bot.final()
        sales_rep = json.dumps([r.body for r in claude.requests])
        assert "salaries" not in sales_rep and "Pay of every employee" not in sales_rep
        claude.queue(Reply.text("Noted."))
        await bot.post(bot.message("what do we pay people?", user=ADMIN, user_name="Alex"))
        await bot.final(count=2)
        finance = json.dumps([r.body for r in claude.requests[1:]])
        assert "salaries" in finance and "Pay of every employee" in finance


async def test_a_person_without_a_mapping_is_refused_and_nothing_runs(
    monkeypatch: pytest.MonkeyPatch, warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(monkeypatch, warehouse, tmp_path) as (bot, claude):
        bot.fake.members["29:aad-eve"] = {
            "id": "29:aad-eve",
            "name": "Eve",
            "aadObjectId": "aad-eve",
            "email": "aad-eve@contoso.com",
            "userPrincipalName": "aad-eve@contoso.com",
            "tenantId": bot.fake.members[f"29:{MEMBER}"]["tenantId"],
            "userRole": "user",
        }
        await bot.post(bot.message("which accounts are there?", user="aad-eve", user_name="Eve"))
        await bot.final()
        assert any("You have no data access here" in text for text in said(bot))
        assert claude.requests == []


async def test_a_verified_example_made_as_one_role_is_not_offered_to_another(
    monkeypatch: pytest.MonkeyPatch, warehouse: Warehouse, tmp_path: Path
) -> None:
    """Ana (sales) gets an answer and rates it good: her SQL becomes a verified example.
    Alex (an admin, sales too) is offered it; Bo (an admin, finance) is not."""
    marked = "SELECT account AS verified_marker FROM accounts"
    search = Reply.tool("search_saved_correct_tool_uses", {"question": "which accounts are mine"})
    roles = {
        f"user:{MEMBER}@contoso.com": "sales_reader",
        f"user:{ADMIN}@contoso.com": "sales_reader",
        f"user:{BO}@contoso.com": "finance_reader",
    }
    config = mapping(warehouse).model_copy(update={"roles": roles})
    async with data_bot(monkeypatch, warehouse, tmp_path, config, admin_users=[ADMIN, BO]) as (
        bot,
        claude,
    ):
        claude.queue(Reply.tool("run_sql", {"sql": marked}), Reply.text("Here."))
        thread = "19:general@thread.tacv2;messageid=1800000000001"
        asked = bot.message("which accounts are mine?", kind="channel", conversation=thread)
        await bot.post(asked)
        await bot.final()
        value = {"actionName": "feedback", "actionValue": {"reaction": "like"}}
        like = bot.invoke("message/submitAction", value, kind="channel", conversation=thread)
        [answer] = [  # the channel's answer: a reply carrying the feedback buttons
            c for c in bot.answers() if (c.body.get("channelData") or {}).get("feedbackLoop")
        ]
        like["replyToId"] = answer.response["id"]
        assert (await bot.post(like)).status == 200
        offered = {}
        for number, user in enumerate((ADMIN, BO), start=2):
            before = len(claude.requests)
            claude.queue(search, Reply.text("Done."))
            other = f"19:general@thread.tacv2;messageid=180000000000{number}"
            await bot.post(
                bot.message(
                    "which accounts are mine?",
                    kind="channel",
                    conversation=other,
                    user=user,
                    user_name=user,
                )
            )
            await bot.final(count=number)
            offered[user] = json.dumps([r.body["messages"][-1] for r in claude.requests[before:]])
        assert "verified_marker" in offered[ADMIN]
        assert "verified_marker" not in offered[BO]
