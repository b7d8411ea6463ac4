"""End to end in Slack on your database (issue 14): the real bot, the built-in agent on
``THREADLINE_DATABASE_URL`` at a real PostgreSQL server, the real Anthropic client on the fake
Messages API issuing ``run_sql``. The rows reach the thread as a table; a ``DELETE`` is
refused and the table is intact; the prompt carried the schema of the tables asked about."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_core import Agent, UserResolver
from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state_factory import State
from bots.demo.agent import DemoSettings, build_demo_agent
from tests.bots.slack.harness import SlackHarness, running_bot
from tests.support.postgres_shop import OWNER_PASSWORD, Shop

pytestmark = pytest.mark.postgres

TOP = (
    "SELECT c.name, sum(o.total) AS revenue FROM customers c JOIN orders o "
    "ON o.customer_id = c.id WHERE o.status = 'paid' GROUP BY c.name ORDER BY revenue DESC"
)


def mention(text: str, ts: str) -> dict[str, object]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


async def test_rows_reach_the_thread_as_a_table_and_a_delete_is_refused(
    tmp_path: Path, pg_shop: Shop
) -> None:
    async with FakeAnthropic() as llm:

        def agent_factory(resolver: UserResolver, state: State) -> Agent:
            return build_demo_agent(
                DemoSettings(
                    data_dir=tmp_path,
                    database_url=pg_shop.owner_url,  # type: ignore[arg-type]
                    anthropic_api_key="sk-ant-test",  # type: ignore[arg-type]
                    anthropic_base_url=llm.base_url,
                    anthropic_model="claude-test-model",
                    user_resolver=resolver,
                    agent_memory=state.memory,
                    conversation_store=state.conversations,
                )
            )

        async with running_bot(tmp_path, [], agent_factory=agent_factory) as h:
            try:
                await _ask_and_check(h, llm)
            finally:
                await h.agent.llm_service.aclose()  # type: ignore[attr-defined]
    assert pg_shop.count("orders") == 60
    everything = json.dumps([call.args for call in h.fake.calls], default=str)
    assert OWNER_PASSWORD not in everything


async def _ask_and_check(h: SlackHarness, llm: FakeAnthropic) -> None:
    enhancer = h.agent.llm_context_enhancer
    assert isinstance(enhancer, SchemaContextEnhancer)
    assert await asyncio.to_thread(enhancer.source.started.wait, 20)

    llm.queue(Reply.tool("run_sql", {"sql": TOP}), Reply.text("Acme leads."))
    await h.event(mention("Which clients bring in the most money?", "100.000100"))
    await h.idle()
    table = next(
        block
        for call in h.fake.calls
        for block in call.args.get("blocks") or []
        if block.get("type") == "table"
    )
    cells = json.dumps(table["rows"])
    assert "Acme" in cells and "Globex" in cells and "Initech" in cells
    system = json.dumps(llm.requests[0].body["system"])
    assert "CREATE TABLE customers" in system and "CREATE TABLE orders" in system
    assert "Dialect: PostgreSQL" in system and OWNER_PASSWORD not in system

    llm.queue(
        Reply.tool("run_sql", {"sql": "DELETE FROM orders"}),
        Reply.text("I can only read the data."),
    )
    await h.event(mention("Delete every order", "200.000100"))
    await h.idle()
    tool_result = json.dumps(llm.requests[-1].body["messages"][-1])
    assert "read_only" in tool_result and "refused DELETE" in tool_result
    assert h.fake.visible("C1")[-1].text == "I can only read the data."
