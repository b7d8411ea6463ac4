"""End to end in Teams on your database (issue 14): ``threadline teams``'s own agent wiring
(``bots.serving.agent_factory``) with ``THREADLINE_DATABASE_URL`` at a real PostgreSQL
server and the real Anthropic client on the fake Messages API issuing ``run_sql``: the rows
reach the conversation as a table; a ``DELETE`` is refused and the table is intact."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state_factory import StateSettings, build_state
from agent_core.users import UserResolver
from bots.serving import agent_factory, load_config
from bots.teams.settings import TeamsSettings
from tests.bots.teams.harness import teams_bot
from tests.support.postgres_shop import READER_PASSWORD, Shop

pytestmark = pytest.mark.postgres

TOP = (
    "SELECT c.name, count(*) AS orders FROM customers c JOIN orders o "
    "ON o.customer_id = c.id GROUP BY c.name ORDER BY orders DESC"
)


async def test_rows_arrive_as_a_table_and_a_delete_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pg_shop: Shop
) -> None:
    state = build_state(StateSettings(ephemeral=True))
    async with FakeAnthropic() as llm:
        for name, value in {
            "THREADLINE_DATABASE_URL": pg_shop.reader_url,
            "THREADLINE_DATA_DIR": str(tmp_path),
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": llm.base_url,
            "ANTHROPIC_MODEL": "claude-test-model",
        }.items():
            monkeypatch.setenv(name, value)

        config = load_config(argparse.Namespace(command="teams"))

        def threadline_teams_agent(resolver: UserResolver, settings: TeamsSettings) -> Any:
            return agent_factory(config, "teams")(state, resolver)

        try:
            async with teams_bot(monkeypatch, agent_factory=threadline_teams_agent) as bot:
                enhancer = bot.agent.llm_context_enhancer
                assert isinstance(enhancer, SchemaContextEnhancer)
                assert await asyncio.to_thread(enhancer.source.started.wait, 20)

                llm.queue(Reply.tool("run_sql", {"sql": TOP}), Reply.text("Acme leads."))
                await bot.post(bot.message("Which clients order most?", kind="groupChat"))
                answer = json.dumps((await bot.final()).body)
                assert '"type": "Table"' in answer
                assert all(name in answer for name in ("Acme", "Globex", "Initech"))

                llm.queue(
                    Reply.tool("run_sql", {"sql": "DELETE FROM orders"}),
                    Reply.text("I can only read the data."),
                )
                await bot.post(bot.message("Delete every order", kind="groupChat"))
                refused = json.dumps((await bot.final(count=2)).body)
                assert "I can only read the data." in refused
                tool_result = json.dumps(llm.requests[-1].body["messages"][-1])
                assert "refused DELETE" in tool_result
                everything = json.dumps([c.body for c in bot.fake.calls], default=str)
                assert READER_PASSWORD not in everything
                await bot.agent.llm_service.aclose()  # type: ignore[attr-defined]
        finally:
            await state.aclose()
    assert pg_shop.count("orders") == 60
