"""Data follows the asker, through the real Slack bot (issue 24): signed mentions into the
bolt app, the built-in agent over a real PostgreSQL whose policies decide each person's rows,
the real Anthropic client against the shipped fake Messages API.

People are mapped by the email the workspace gives them (``users.info``), so the mapping is
configuration, never a name someone can create.
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
from tests.bots.slack.harness import SlackHarness, running_bot
from tests.bots.slack.test_bot_entry_points import mention
from tests.support.postgres_identity import Warehouse

pytestmark = pytest.mark.postgres

ACCOUNTS = "SELECT account FROM accounts ORDER BY account"


def mapping(warehouse: Warehouse) -> DatabaseConfig:
    return DatabaseConfig(
        url=warehouse.url,
        roles={
            "user:ana@acme.io": "sales_reader",
            "user:bo@acme.io": "sales_reader",
            "user:alex@acme.io": "finance_reader",
        },
        unmapped="refuse",
    )


@asynccontextmanager
async def data_bot(
    warehouse: Warehouse, tmp_path: Path, config: DatabaseConfig | None = None, **settings: Any
) -> AsyncIterator[tuple[SlackHarness, FakeAnthropic]]:
    """The Slack bot serving the built-in agent on the warehouse, Claude being the fake."""
    async with FakeAnthropic() as claude:

        def build(resolver: Any, state: Any) -> Any:
            agent = build_demo_agent(
                DemoSettings(
                    data_dir=tmp_path,
                    database=config or mapping(warehouse),
                    anthropic_api_key="sk-ant-test",  # type: ignore[arg-type]
                    anthropic_base_url=claude.base_url,
                    user_resolver=resolver,
                    agent_memory=state.memory,
                    conversation_store=state.conversations,
                )
            )
            agent.llm_context_enhancer.source.started.wait(30)
            return agent

        async with running_bot(tmp_path, [], agent_factory=build, **settings) as h:
            try:
                yield h, claude
            finally:
                await h.agent.llm_service.aclose()  # type: ignore[attr-defined]


def posted(h: SlackHarness) -> list[str]:
    return [json.dumps(call.args) for call in h.fake.calls_to("chat.postMessage")]


async def test_two_people_in_one_thread_each_see_their_own_rows(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(warehouse, tmp_path) as (h, claude):
        claude.queue(Reply.tool("run_sql", {"sql": ACCOUNTS}), Reply.text("Here."))
        await h.event(mention("<@UBOT> which accounts are mine?"))
        await h.idle()
        claude.queue(Reply.tool("run_sql", {"sql": ACCOUNTS}), Reply.text("Here."))
        bo = mention("<@UBOT> and mine?", ts="101.000100", user="U2", thread_ts="100.000100")
        await h.event(bo)
        await h.idle()
        answers = [p for p in posted(h) if "acct-" in p]
        assert any("acct-ana-slack" in p and "acct-bo-slack" not in p for p in answers)
        assert any("acct-bo-slack" in p and "acct-ana-slack" not in p for p in answers)
        assert not any("acct-ana-slack" in p and "acct-bo-slack" in p for p in answers)
        results = [json.dumps(r.body["messages"][-1]) for r in claude.requests[1::2]]
        assert "acct-ana-slack" in results[0] and "acct-bo-slack" not in results[0]
        assert "acct-bo-slack" in results[1] and "acct-ana-slack" not in results[1]


async def test_the_finance_tables_never_reach_a_sales_reps_llm_request(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(warehouse, tmp_path) as (h, claude):
        claude.queue(Reply.text("Noted."))
        await h.event(mention("<@UBOT> what do we pay people?"))
        await h.idle()
        sales_rep = json.dumps([r.body for r in claude.requests])
        assert "salaries" not in sales_rep and "Pay of every employee" not in sales_rep
        claude.queue(Reply.text("Noted."))
        await h.event(mention("<@UBOT> what do we pay people?", ts="300.000100", user="UADMIN"))
        await h.idle()
        finance = json.dumps([r.body for r in claude.requests[1:]])
        assert "salaries" in finance and "Pay of every employee" in finance


async def test_a_person_without_a_mapping_is_refused_and_nothing_runs(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    async with data_bot(warehouse, tmp_path) as (h, claude):
        h.fake.users["U3"] = {
            "id": "U3",
            "team_id": "T1",
            "profile": {"display_name": "Eve", "email": "eve@acme.io"},
        }
        await h.event(mention("<@UBOT> which accounts are there?", user="U3"))
        await h.idle()
        assert any("You have no data access here" in p for p in posted(h))
        assert claude.requests == []


async def test_a_verified_example_made_as_one_role_is_not_offered_to_another(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """Ana (sales) gets an answer and rates it good: her SQL becomes a verified example.
    Alex (an admin, sales too) is offered it; Bo (an admin, finance) is not."""
    from adapters.slack.controls import FEEDBACK_ACTION
    from tests.bots.slack.test_memory_privacy import feedback_on

    marked = "SELECT account AS verified_marker FROM accounts"
    search = Reply.tool("search_saved_correct_tool_uses", {"question": "which accounts are mine"})
    roles = {"user:ana@acme.io": "sales_reader", "user:alex@acme.io": "sales_reader"}
    mapped = mapping(warehouse).model_copy(
        update={"roles": {**roles, "user:bo@acme.io": "finance_reader"}}
    )
    async with data_bot(warehouse, tmp_path, mapped, admin_users=["UADMIN", "U2"]) as (h, claude):
        claude.queue(Reply.tool("run_sql", {"sql": marked}), Reply.text("Here."))
        await h.event(mention("<@UBOT> which accounts are mine?"))
        await h.idle()
        block_id, answer = feedback_on(h, h.fake.calls)
        await h.action(
            FEEDBACK_ACTION,
            "positive",
            user="U1",
            channel="C1",
            message_ts=answer.ts,
            thread_ts=answer.thread_ts,
            block_id=block_id,
        )
        await h.idle()
        offered = {}
        for user, ts in (("UADMIN", "400.000100"), ("U2", "500.000100")):
            before = len(claude.requests)
            claude.queue(search, Reply.text("Done."))
            await h.event(mention("<@UBOT> which accounts are mine?", ts=ts, user=user))
            await h.idle()
            offered[user] = json.dumps([r.body["messages"][-1] for r in claude.requests[before:]])
        assert "verified_marker" in offered["UADMIN"]
        assert "verified_marker" not in offered["U2"]
