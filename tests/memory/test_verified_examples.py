"""Feedback teaches (issue 14): a thumbs-up makes an answer's SQL a verified example that
``search_saved_correct_tool_uses`` offers before unrated ones; a thumbs-down one is never
offered again. Every back end ranks through ``ScopeIndex``, so each is checked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.state.memory_sqlite import SqliteAgentMemory
from agent_core.tools.memory_tools import (
    SearchSavedCorrectToolUsesArgs,
    SearchSavedCorrectToolUsesTool,
)
from tests.memory.contract import tool_context


@pytest.fixture(params=["in_memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AgentMemory]:
    if request.param == "in_memory":
        yield InMemoryAgentMemory()
        return
    sqlite = SqliteAgentMemory(tmp_path / "memory.db")
    yield sqlite
    await sqlite.close()


async def _save(memory: AgentMemory, question: str, sql: str, turn: str) -> None:
    context = tool_context(admin=True, turn=turn)
    await memory.save_tool_usage(question, "run_sql", {"sql": sql}, context)


async def test_a_verified_example_outranks_a_closer_unrated_one(memory: AgentMemory) -> None:
    await _save(memory, "top customers by revenue this year", "SELECT 'unrated'", "t1")
    await _save(memory, "top customers by revenue in the last year", "SELECT 'verified'", "t2")
    asker = tool_context(admin=True, turn="t3")
    before = await memory.search_similar_usage(
        "top customers by revenue this year", asker, similarity_threshold=0.3
    )
    assert before[0].memory.args == {"sql": "SELECT 'unrated'"}  # closer, by similarity

    assert await memory.rate_turn(tool_context(admin=True), "t2", good=True) == 1
    after = await memory.search_similar_usage(
        "top customers by revenue this year", asker, similarity_threshold=0.3
    )
    assert [hit.memory.args["sql"] for hit in after] == ["SELECT 'verified'", "SELECT 'unrated'"]
    assert after[0].memory.verdict == "good" and after[0].rank == 1
    assert after[0].similarity_score < after[1].similarity_score  # scores stay honest


async def test_a_thumbs_down_example_is_never_offered_again(memory: AgentMemory) -> None:
    await _save(memory, "revenue by country", "SELECT 'wrong'", "t1")
    await _save(memory, "revenue per country", "SELECT 'fine'", "t2")
    assert await memory.rate_turn(tool_context(admin=True), "t1", good=False) == 1
    context = tool_context(admin=True, turn="t3")
    hits = await memory.search_similar_usage(
        "revenue by country", context, similarity_threshold=0.0
    )
    assert [hit.memory.args["sql"] for hit in hits] == ["SELECT 'fine'"]
    listed = await memory.get_recent_memories(context)
    assert {m.args["sql"]: m.verdict for m in listed} == {
        "SELECT 'wrong'": "bad",
        "SELECT 'fine'": "unrated",
    }  # still listed (for /memories), never suggested


async def test_the_search_tool_tells_the_model_which_examples_are_verified(
    memory: AgentMemory,
) -> None:
    await _save(memory, "orders by status", "SELECT status, count(*) FROM orders", "t1")
    await memory.rate_turn(tool_context(admin=True), "t1", good=True)
    context = tool_context(admin=True, turn="t2")
    context.agent_memory = memory
    result = await SearchSavedCorrectToolUsesTool().execute(
        context, SearchSavedCorrectToolUsesArgs(question="orders per status")
    )
    assert "verified by a thumbs-up" in result.result_for_llm
