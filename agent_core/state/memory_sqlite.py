"""``SqliteAgentMemory``: agent memory in an embedded SQLite file, ranked like the rest."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import uuid
from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING, Any

from agent_core.memory.base import (
    AgentMemory,
    TextMemory,
    TextMemorySearchResult,
    ToolMemory,
    ToolMemorySearchResult,
    memory_scope,
)
from agent_core.memory.index import ScopeIndex, ToolEntry, parse_timestamp, tool_fingerprint
from agent_core.memory.ranking import Analyzer
from agent_core.state.sqlite import SqliteDatabase

if TYPE_CHECKING:
    from agent_core.tools.base import ToolContext

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    question TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    success INTEGER NOT NULL,
    timestamp TEXT NOT NULL,
    epoch REAL NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (scope, id),
    UNIQUE (scope, fingerprint)
);
CREATE TABLE IF NOT EXISTS text_memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    UNIQUE (scope, id)
);
"""


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _trim(connection: sqlite3.Connection, table: str, scope: str, keep: int) -> list[str]:
    """Delete the scope's oldest rows beyond ``keep``; returns their ids."""
    rows = connection.execute(
        f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM {table} WHERE scope = ?"
        " ORDER BY seq DESC LIMIT -1 OFFSET ?) RETURNING id",
        (scope, keep),
    ).fetchall()
    return [memory_id for (memory_id,) in rows]


class SqliteAgentMemory(AgentMemory):
    """The default single-process ``AgentMemory``: memories in an SQLite file (so a restart
    keeps what the agent learned), ranked by the same ``RelevanceIndex`` as
    ``InMemoryAgentMemory``. Behaviour matches it: scoped by ``memory_scope(context)``,
    duplicates refreshed, at most ``max_items`` of each kind per scope.

    >>> import asyncio, tempfile, os
    >>> from agent_core.tools.base import ToolContext
    >>> from agent_core.users import User
    >>> ctx = ToolContext(user=User(id="u"), conversation_id="c", request_id="r")
    >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
    >>> async def demo():
    ...     memory = SqliteAgentMemory(path)
    ...     await memory.save_tool_usage("top 5 customers by revenue", "run_sql", {"sql": "S"}, ctx)
    ...     await memory.close()
    ...     memory = SqliteAgentMemory(path)
    ...     hits = await memory.search_similar_usage("customers with the most revenue", ctx)
    ...     await memory.close()
    ...     return hits[0].memory.args
    >>> asyncio.run(demo())
    {'sql': 'S'}
    """

    def __init__(
        self,
        database: SqliteDatabase | str | PathLike[str],
        *,
        max_items: int = 10_000,
        analyzer: Analyzer | None = None,
        clock: Callable[[], dt.datetime] = _utc_now,
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)
        self.max_items = max_items
        self._analyzer = analyzer or Analyzer()
        self._clock = clock
        self._scopes: dict[str, ScopeIndex] = {}
        self._lock = asyncio.Lock()

    def _now(self) -> str:
        return self._clock().astimezone(dt.UTC).isoformat()

    async def _index(self, scope: str) -> ScopeIndex:
        index = self._scopes.get(scope)
        if index is not None:
            return index

        def load(connection: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            tools = connection.execute(
                "SELECT id, question, tool_name, success, timestamp FROM tool_memories"
                " WHERE scope = ? ORDER BY seq",
                (scope,),
            ).fetchall()
            texts = connection.execute(
                "SELECT id, content, timestamp FROM text_memories WHERE scope = ? ORDER BY seq",
                (scope,),
            ).fetchall()
            return tools, texts

        tools, texts = await self._db.run(load)
        index = ScopeIndex(self._analyzer)
        for memory_id, question, tool_name, success, timestamp in tools:
            index.put_tool(memory_id, ToolEntry(question, tool_name, bool(success), timestamp))
        for memory_id, content, timestamp in texts:
            index.put_text(TextMemory(memory_id=memory_id, content=content, timestamp=timestamp))
        self._scopes[scope] = index
        return index

    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: ToolContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        scope = memory_scope(context)
        fingerprint = tool_fingerprint(question, tool_name, args, success)
        memory = ToolMemory(
            question=question, tool_name=tool_name, args=dict(args), timestamp=self._now(),
            success=success, metadata=dict(metadata) if metadata else None,
        )  # fmt: skip
        epoch = parse_timestamp(memory.timestamp or "").timestamp()

        def write(connection: sqlite3.Connection) -> tuple[str, list[str]]:
            found = connection.execute(
                "DELETE FROM tool_memories WHERE scope = ? AND fingerprint = ? RETURNING id",
                (scope, fingerprint),
            ).fetchone()
            memory.memory_id = found[0] if found else uuid.uuid4().hex
            connection.execute(
                "INSERT INTO tool_memories (scope, id, fingerprint, question, tool_name,"
                " success, timestamp, epoch, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope, memory.memory_id, fingerprint, question, tool_name, int(success),
                 memory.timestamp, epoch, memory.model_dump_json()),
            )  # fmt: skip
            return memory.memory_id, _trim(connection, "tool_memories", scope, self.max_items)

        async with self._lock:
            index = await self._index(scope)
            memory_id, dropped = await self._db.transaction(write)
            index.put_tool(
                memory_id, ToolEntry(question, tool_name, success, memory.timestamp or "")
            )
            for old in dropped:
                index.drop_tool(old)

    async def save_text_memory(self, content: str, context: ToolContext) -> TextMemory:
        scope = memory_scope(context)
        memory = TextMemory(memory_id=uuid.uuid4().hex, content=content, timestamp=self._now())

        def write(connection: sqlite3.Connection) -> list[str]:
            connection.execute(
                "INSERT INTO text_memories (scope, id, content, timestamp) VALUES (?, ?, ?, ?)",
                (scope, memory.memory_id, content, memory.timestamp),
            )
            return _trim(connection, "text_memories", scope, self.max_items)

        async with self._lock:
            index = await self._index(scope)
            dropped = await self._db.transaction(write)
            index.put_text(memory)
            for old in dropped:
                index.drop_text(old)
        return memory.model_copy()

    async def _tool_bodies(self, scope: str, ids: list[str]) -> dict[str, ToolMemory]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = f"SELECT id, body FROM tool_memories WHERE scope = ? AND id IN ({marks})"
        rows = await self._db.run(lambda c: c.execute(sql, (scope, *ids)).fetchall())
        return {memory_id: ToolMemory.model_validate_json(body) for memory_id, body in rows}

    async def search_similar_usage(
        self,
        question: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]:
        scope = memory_scope(context)
        async with self._lock:
            index = await self._index(scope)
            hits = index.search_tools(
                question, limit=limit, threshold=similarity_threshold, tool_name=tool_name_filter
            )
        bodies = await self._tool_bodies(scope, [key for key, _ in hits])
        found = [(bodies[key], score) for key, score in hits if key in bodies]
        return [
            ToolMemorySearchResult(memory=memory, similarity_score=score, rank=rank)
            for rank, (memory, score) in enumerate(found, start=1)
        ]

    async def search_text_memories(
        self,
        query: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]:
        async with self._lock:
            index = await self._index(memory_scope(context))
            return index.search_texts(query, limit=limit, threshold=similarity_threshold)

    async def get_recent_memories(self, context: ToolContext, limit: int = 10) -> list[ToolMemory]:
        sql = "SELECT body FROM tool_memories WHERE scope = ? ORDER BY seq DESC LIMIT ?"
        args = (memory_scope(context), max(limit, 0))
        rows = await self._db.run(lambda c: c.execute(sql, args).fetchall())
        return [ToolMemory.model_validate_json(body) for (body,) in rows]

    async def get_recent_text_memories(
        self, context: ToolContext, limit: int = 10
    ) -> list[TextMemory]:
        async with self._lock:
            index = await self._index(memory_scope(context))
            return index.recent_texts(limit)

    async def _delete(self, table: str, scope: str, where: str, args: tuple[Any, ...]) -> list[str]:
        sql = f"DELETE FROM {table} WHERE scope = ? {where} RETURNING id"
        rows = await self._db.run(lambda c: c.execute(sql, (scope, *args)).fetchall())
        return [memory_id for (memory_id,) in rows]

    async def delete_by_id(self, context: ToolContext, memory_id: str) -> bool:
        scope = memory_scope(context)
        async with self._lock:
            index = await self._index(scope)
            deleted = await self._delete("tool_memories", scope, "AND id = ?", (memory_id,))
            index.drop_tool(memory_id)
        return bool(deleted)

    async def delete_text_memory(self, context: ToolContext, memory_id: str) -> bool:
        scope = memory_scope(context)
        async with self._lock:
            index = await self._index(scope)
            deleted = await self._delete("text_memories", scope, "AND id = ?", (memory_id,))
            index.drop_text(memory_id)
        return bool(deleted)

    async def clear_memories(
        self,
        context: ToolContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        scope = memory_scope(context)
        where, args = "", ()  # type: tuple[str, tuple[Any, ...]]
        if tool_name is not None:
            where, args = f"{where} AND tool_name = ?", (*args, tool_name)
        if before_date:
            cutoff = parse_timestamp(before_date).timestamp()
            where, args = f"{where} AND epoch < ?", (*args, cutoff)
        async with self._lock:
            index = await self._index(scope)
            deleted = await self._delete("tool_memories", scope, where, args)
            for memory_id in deleted:
                index.drop_tool(memory_id)
        return len(deleted)

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
