"""``InMemoryAgentMemory``: the shared contract plus what is specific to it."""

from __future__ import annotations

import datetime as dt

import pytest

from agent_core.context import ToolContext
from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.users import User
from tests.memory.contract import AgentMemoryContract, tool_context


class TestInMemoryAgentMemoryContract(AgentMemoryContract):
    @pytest.fixture
    def memory(self) -> AgentMemory:
        return InMemoryAgentMemory()


class _TickingClock:
    """A clock that moves one minute per reading."""

    def __init__(self) -> None:
        self.now = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        self.now += dt.timedelta(minutes=1)
        return self.now


async def test_paraphrases_match_at_the_default_threshold() -> None:
    memory, ctx = InMemoryAgentMemory(), tool_context()
    saved = {
        "top 5 customers by revenue": "SELECT name, SUM(total) ...",
        "monthly revenue trend": "SELECT strftime('%Y-%m', order_date) ...",
        "how many orders last month": "SELECT COUNT(*) FROM orders ...",
        "revenue by product category": "SELECT category, SUM(...) ...",
    }
    for question, sql in saved.items():
        await memory.save_tool_usage(question, "run_sql", {"sql": sql}, ctx)

    async def best(question: str) -> str:
        hits = await memory.search_similar_usage(question, ctx)
        assert hits, f"no match at 0.7 for {question!r}"
        return hits[0].memory.question

    assert await best("which customers brought in the most revenue") == (
        "top 5 customers by revenue"
    )
    assert await best("show me revenue over time by month") == "monthly revenue trend"
    assert await best("number of orders placed last month") == "how many orders last month"
    assert await best("sales per category") == "revenue by product category"


async def test_saving_the_same_use_again_refreshes_it() -> None:
    memory, ctx = InMemoryAgentMemory(clock=_TickingClock()), tool_context()
    await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
    await memory.save_tool_usage("revenue by region", "run_sql", {"sql": "R"}, ctx)
    [_, first] = await memory.get_recent_memories(ctx)
    await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
    recent = await memory.get_recent_memories(ctx)
    assert [m.question for m in recent] == ["orders by status", "revenue by region"]
    assert recent[0].memory_id == first.memory_id
    assert recent[0].timestamp is not None and first.timestamp is not None
    assert recent[0].timestamp > first.timestamp
    assert len(await memory.search_similar_usage("orders by status", ctx)) == 1


async def test_each_scope_keeps_at_most_max_items() -> None:
    memory, ctx = InMemoryAgentMemory(max_items=3), tool_context()
    for n in range(5):
        await memory.save_tool_usage(f"orders in week {n}", "run_sql", {"n": n}, ctx)
        await memory.save_text_memory(f"note {n}", ctx)
    assert [m.args["n"] for m in await memory.get_recent_memories(ctx)] == [4, 3, 2]
    assert [m.content for m in await memory.get_recent_text_memories(ctx)] == [
        "note 4",
        "note 3",
        "note 2",
    ]
    hits = await memory.search_similar_usage("orders in week", ctx, similarity_threshold=0.1)
    assert sorted(h.memory.args["n"] for h in hits) == [2, 3, 4]


async def test_timestamps_are_utc_iso_and_before_date_accepts_plain_dates() -> None:
    memory, ctx = InMemoryAgentMemory(clock=_TickingClock()), tool_context()
    await memory.save_tool_usage("a question", "run_sql", {}, ctx)
    [saved] = await memory.get_recent_memories(ctx)
    assert saved.timestamp == "2025-01-01T00:01:00+00:00"
    assert await memory.clear_memories(ctx, before_date="2025-01-01") == 0
    assert await memory.clear_memories(ctx, before_date="2025-01-02") == 1


async def test_explicit_memory_scope_overrides_the_workspace() -> None:
    memory = InMemoryAgentMemory()
    user = User(id="u", metadata={"workspace_id": "T1"})
    tenant_a = ToolContext(
        user=user, conversation_id="c", request_id="r", metadata={"memory_scope": "A"}
    )
    tenant_b = tenant_a.model_copy(update={"metadata": {"memory_scope": "B"}})
    await memory.save_text_memory("fiscal year starts in April", tenant_a)
    assert await memory.get_recent_text_memories(tenant_b) == []
    assert await memory.get_recent_text_memories(tool_context("T1")) == []
    assert len(await memory.get_recent_text_memories(tenant_a)) == 1


async def test_limit_zero_and_invalid_size() -> None:
    memory, ctx = InMemoryAgentMemory(), tool_context()
    await memory.save_tool_usage("orders by status", "run_sql", {}, ctx)
    assert await memory.search_similar_usage("orders by status", ctx, limit=0) == []
    assert await memory.get_recent_memories(ctx, limit=0) == []
    with pytest.raises(ValueError):
        InMemoryAgentMemory(max_items=0)
