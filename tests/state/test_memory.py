"""Durable ``AgentMemory`` back ends: the shared contract (tests/memory/contract.py) plus
persistence, ranking parity with ``InMemoryAgentMemory`` and cross-process visibility."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.state.memory_redis import RedisAgentMemory
from agent_core.state.memory_sqlite import SqliteAgentMemory
from agent_core.state.redis_client import connect_redis
from tests.memory.contract import AgentMemoryContract, tool_context

if TYPE_CHECKING:
    from redis.asyncio import Redis


class TestSqliteAgentMemoryContract(AgentMemoryContract):
    @pytest.fixture
    async def memory(self, tmp_path: Path) -> AsyncIterator[AgentMemory]:
        memory = SqliteAgentMemory(tmp_path / "memory.db")
        yield memory
        await memory.close()


QUESTIONS = {
    "top 5 customers by revenue": "SELECT name, SUM(total) ...",
    "monthly revenue trend": "SELECT strftime('%Y-%m', order_date) ...",
    "how many orders last month": "SELECT COUNT(*) FROM orders ...",
    "revenue by product category": "SELECT category, SUM(...) ...",
    "orders by status": "SELECT status, COUNT(*) ...",
}
QUERIES = [
    "which customers brought in the most revenue",
    "show me revenue over time by month",
    "number of orders placed last month",
    "sales per category",
    "status of orders",
]


async def ranking(memory: AgentMemory) -> list[list[tuple[str, float]]]:
    ctx = tool_context()
    for question, sql in QUESTIONS.items():
        await memory.save_tool_usage(question, "run_sql", {"sql": sql}, ctx)
        await memory.save_text_memory(f"note: {question}", ctx)
    found = []
    for query in QUERIES:
        tools = await memory.search_similar_usage(query, ctx, similarity_threshold=0.0)
        texts = await memory.search_text_memories(query, ctx, similarity_threshold=0.0)
        found.append([(h.memory.question, round(h.similarity_score, 6)) for h in tools])
        found.append([(h.memory.content, round(h.similarity_score, 6)) for h in texts])
    return found


async def test_sqlite_ranks_exactly_like_the_in_memory_memory(tmp_path: Path) -> None:
    memory = SqliteAgentMemory(tmp_path / "memory.db")
    try:
        assert await ranking(memory) == await ranking(InMemoryAgentMemory())
    finally:
        await memory.close()


async def test_sqlite_memories_survive_a_restart(tmp_path: Path) -> None:
    ctx = tool_context()
    memory = SqliteAgentMemory(tmp_path / "memory.db")
    await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
    note = await memory.save_text_memory("fiscal year starts in April", ctx)
    await memory.close()

    reopened = SqliteAgentMemory(tmp_path / "memory.db")
    try:
        [hit] = await reopened.search_similar_usage("orders by status", ctx)
        assert hit.memory.args == {"sql": "S"}
        [text] = await reopened.search_text_memories(
            "when does the fiscal year start", ctx, similarity_threshold=0.3
        )
        assert text.memory == note
    finally:
        await reopened.close()


async def test_sqlite_refreshes_duplicates_and_keeps_max_items(tmp_path: Path) -> None:
    memory, ctx = SqliteAgentMemory(tmp_path / "m.db", max_items=3), tool_context()
    try:
        for n in range(5):
            await memory.save_tool_usage(f"orders in week {n}", "run_sql", {"n": n}, ctx)
            await memory.save_text_memory(f"note {n}", ctx)
        await memory.save_tool_usage("orders in week 2", "run_sql", {"n": 2}, ctx)
        assert [m.args["n"] for m in await memory.get_recent_memories(ctx)] == [2, 4, 3]
        assert [m.content for m in await memory.get_recent_text_memories(ctx)] == [
            "note 4",
            "note 3",
            "note 2",
        ]
        hits = await memory.search_similar_usage("orders in week", ctx, similarity_threshold=0.1)
        assert sorted(h.memory.args["n"] for h in hits) == [2, 3, 4]
    finally:
        await memory.close()


class TestRedisAgentMemoryContract(AgentMemoryContract):
    @pytest.fixture
    def memory(self, redis: Redis, key_prefix: str) -> AgentMemory:
        return RedisAgentMemory(redis, key_prefix=key_prefix)


async def test_redis_ranks_exactly_like_the_in_memory_memory(redis: Redis, key_prefix: str) -> None:
    memory = RedisAgentMemory(redis, key_prefix=key_prefix)
    assert await ranking(memory) == await ranking(InMemoryAgentMemory())


async def test_redis_refreshes_duplicates_and_keeps_max_items(
    redis: Redis, key_prefix: str
) -> None:
    memory, ctx = RedisAgentMemory(redis, key_prefix=key_prefix, max_items=3), tool_context()
    for n in range(5):
        await memory.save_tool_usage(f"orders in week {n}", "run_sql", {"n": n}, ctx)
        await memory.save_text_memory(f"note {n}", ctx)
    await memory.save_tool_usage("orders in week 2", "run_sql", {"n": 2}, ctx)
    assert [m.args["n"] for m in await memory.get_recent_memories(ctx)] == [2, 4, 3]
    assert [m.content for m in await memory.get_recent_text_memories(ctx)] == [
        "note 4",
        "note 3",
        "note 2",
    ]
    hits = await memory.search_similar_usage("orders in week", ctx, similarity_threshold=0.1)
    assert sorted(h.memory.args["n"] for h in hits) == [2, 3, 4]


async def test_redis_processes_see_each_others_memories(redis_url: str, key_prefix: str) -> None:
    """What one process learns, another finds on its next search, deletes included."""
    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        left = RedisAgentMemory(one, key_prefix=key_prefix, refresh_interval=0)
        right = RedisAgentMemory(two, key_prefix=key_prefix, refresh_interval=0)
        ctx = tool_context()
        assert await right.search_similar_usage("orders by status", ctx) == []  # mirror built
        await left.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
        note = await left.save_text_memory("revenue excludes cancelled orders", ctx)
        [hit] = await right.search_similar_usage("orders by status", ctx)
        assert hit.memory.args == {"sql": "S"}
        assert note.memory_id and await right.delete_text_memory(ctx, note.memory_id)
        assert await left.search_text_memories("revenue excludes cancelled orders", ctx) == []
        assert await right.clear_memories(ctx) == 1
        assert await left.search_similar_usage("orders by status", ctx) == []
    finally:
        await one.aclose()
        await two.aclose()


async def test_redis_follower_that_fell_behind_the_log_reloads(
    redis: Redis, key_prefix: str
) -> None:
    """A process further behind than the kept change log rebuilds its index in one call."""
    writer = RedisAgentMemory(redis, key_prefix=key_prefix, log_length=5)
    reader = RedisAgentMemory(redis, key_prefix=key_prefix, log_length=5, refresh_interval=0)
    ctx = tool_context()
    await writer.save_tool_usage("question zero", "run_sql", {"n": 0}, ctx)
    assert len(await reader.search_similar_usage("question zero", ctx)) == 1
    for n in range(1, 400):
        await writer.save_tool_usage(f"question {n}", "run_sql", {"n": n}, ctx)
    await redis.xtrim(writer.scope_keys("T1")[-1], maxlen=3)  # what approximate MAXLEN does
    [newest] = await writer.get_recent_memories(ctx, limit=1)
    assert newest.memory_id and await writer.delete_by_id(ctx, newest.memory_id)
    hits = await reader.search_similar_usage("question", ctx, limit=1000, similarity_threshold=0.1)
    assert len(hits) == 399
    assert {h.memory.args["n"] for h in hits} == set(range(399))


async def test_redis_follows_other_processes_at_most_every_refresh_interval(
    redis: Redis, key_prefix: str
) -> None:
    """Searches within ``refresh_interval`` cost no round trip and may miss what another
    process just saved; this process's own writes are always seen at once."""
    ctx = tool_context()
    left = RedisAgentMemory(redis, key_prefix=key_prefix, refresh_interval=0)
    right = RedisAgentMemory(redis, key_prefix=key_prefix, refresh_interval=3600)
    assert await right.search_similar_usage("orders by status", ctx) == []
    await left.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
    assert await right.search_similar_usage("orders by status", ctx) == []  # within interval
    await right.save_tool_usage("orders by region", "run_sql", {"sql": "R"}, ctx)
    found = await right.search_similar_usage("orders by", ctx, similarity_threshold=0.1)
    assert sorted(h.memory.args["sql"] for h in found) == ["R", "S"]


_LEGACY_SQLITE = """
CREATE TABLE tool_memories (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,
    id TEXT NOT NULL, fingerprint TEXT NOT NULL, question TEXT NOT NULL, tool_name TEXT NOT NULL,
    success INTEGER NOT NULL, timestamp TEXT NOT NULL, epoch REAL NOT NULL, body TEXT NOT NULL,
    UNIQUE (scope, id), UNIQUE (scope, fingerprint));
CREATE TABLE text_memories (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,
    id TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL, UNIQUE (scope, id));
INSERT INTO tool_memories (scope, id, fingerprint, question, tool_name, success, timestamp,
    epoch, body) VALUES ('T1', 'old1', 'fp', 'orders by status', 'run_sql', 1,
    '2025-01-01T00:00:00+00:00', 0, '{"question": "orders by status", "tool_name": "run_sql",
    "args": {"sql": "LEGACY-SQL"}}');
INSERT INTO text_memories (scope, id, content, timestamp)
    VALUES ('T1', 'old2', 'LEGACY-NOTE fiscal year', '2025-01-01T00:00:00+00:00');
"""


async def test_sqlite_file_from_before_owners_is_migrated_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Memories saved before memories had owners were offered to everyone; no one may be
    offered them now: they are dropped, with a log line saying how many."""
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(_LEGACY_SQLITE)
    memory = SqliteAgentMemory(path)
    try:
        ctx = tool_context()
        assert await memory.get_recent_memories(ctx) == []
        assert await memory.get_recent_text_memories(ctx) == []
        assert "dropped 2 memories saved before memories had owners" in caplog.text
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "NEW"}, ctx)
        [hit] = await memory.search_similar_usage("orders by status", ctx)
        assert hit.memory.args == {"sql": "NEW"}
    finally:
        await memory.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM tool_memories").fetchone() == (1,)


async def test_redis_scope_from_before_owners_is_migrated_and_logged(
    redis: Redis, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = RedisAgentMemory(redis, key_prefix=key_prefix)
    keys = memory.scope_keys("T1")
    legacy_meta = json.dumps({"q": "orders by status", "t": "run_sql", "s": True, "ts": "2025"})
    await redis.hset(
        keys[0],
        "old1",
        json.dumps(
            {"question": "orders by status", "tool_name": "run_sql", "args": {"sql": "LEGACY-SQL"}}
        ),
    )
    await redis.hset(keys[1], "old1", legacy_meta)
    await redis.zadd(keys[2], {"old1": 1})
    legacy_note = json.dumps({"content": "LEGACY-NOTE", "timestamp": "x"})
    await redis.hset(keys[5], "old2", legacy_note)
    await redis.zadd(keys[6], {"old2": 2})
    # the change log an older process wrote beside them
    await redis.set(keys[7], 2)
    await redis.xadd(keys[8], {"seq": 1, "op": "put_tool", "id": "old1", "meta": legacy_meta})
    await redis.xadd(keys[8], {"seq": 2, "op": "put_text", "id": "old2", "meta": legacy_note})
    ctx = tool_context(admin=True)
    assert await memory.get_recent_memories(ctx) == []
    assert await memory.get_recent_text_memories(ctx) == []
    assert "dropped 1 tool and 1 text memories of scope 'T1'" in caplog.text
    assert await redis.hlen(keys[0]) == 0 and await redis.hlen(keys[5]) == 0


async def test_immediate_sharing_offers_shared_conversations_at_once_never_private_ones() -> None:
    memory = InMemoryAgentMemory(sharing="immediate")
    ana_channel = tool_context(user="UANA")
    ana_dm = tool_context(user="UANA", where="dm")
    await memory.save_text_memory("channel note about revenue", ana_channel)
    await memory.save_text_memory("dm note about revenue", ana_dm)
    bo = tool_context(user="UBO")
    found = await memory.search_text_memories("note about revenue", bo, similarity_threshold=0.1)
    assert [hit.memory.content for hit in found] == ["channel note about revenue"]
