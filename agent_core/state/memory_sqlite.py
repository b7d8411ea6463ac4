"""``SqliteAgentMemory``: agent memory in an embedded SQLite file, ranked like the rest."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import sqlite3
from collections.abc import Callable
from os import PathLike
from typing import Any

from agent_core.clock import utcnow
from agent_core.memory.access import Sharing
from agent_core.memory.base import TextMemory, ToolMemory
from agent_core.memory.index import (
    ScopeIndex,
    ToolEntry,
    ownership_from_json,
    ownership_json,
    ownership_of,
    parse_timestamp,
)
from agent_core.memory.indexed import IndexedAgentMemory, Kind
from agent_core.memory.ranking import Analyzer
from agent_core.state.sqlite import SqliteDatabase

logger = logging.getLogger(__name__)

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
    ownership TEXT,
    UNIQUE (scope, id),
    UNIQUE (scope, fingerprint)
);
CREATE TABLE IF NOT EXISTS text_memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    ownership TEXT,
    UNIQUE (scope, id)
);
"""

_TABLES = {"tool": "tool_memories", "text": "text_memories"}


def _trim(connection: sqlite3.Connection, table: str, scope: str, keep: int) -> list[str]:
    """Delete the scope's oldest rows beyond ``keep``; returns their ids."""
    rows = connection.execute(
        f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM {table} WHERE scope = ?"
        " ORDER BY seq DESC LIMIT -1 OFFSET ?) RETURNING id",
        (scope, keep),
    ).fetchall()
    return [memory_id for (memory_id,) in rows]


def _migrate(connection: sqlite3.Connection) -> int:
    """Bring a file from before memories had owners up to date: add the ``ownership``
    column and delete the rows that have none (no one can safely be offered them)."""
    dropped = 0
    for table in _TABLES.values():
        columns = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        if "ownership" not in columns:
            connection.execute(f"ALTER TABLE {table} ADD COLUMN ownership TEXT")
        dropped += connection.execute(f"DELETE FROM {table} WHERE ownership IS NULL").rowcount
    return dropped


class SqliteAgentMemory(IndexedAgentMemory):
    """The default single-process ``AgentMemory``: memories in an SQLite file (so a restart
    keeps what the agent learned), ranked and offered exactly as ``InMemoryAgentMemory``
    does. A file written before memories had owners is migrated on first use: its
    memories are dropped, with a log line saying how many.

    >>> import asyncio, tempfile, os
    >>> from agent_core.context import ToolContext
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
        clock: Callable[[], dt.datetime] = utcnow,
        sharing: Sharing = "on_feedback",
    ) -> None:
        super().__init__(max_items=max_items, analyzer=analyzer, clock=clock, sharing=sharing)
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)
        self._scopes: dict[str, ScopeIndex] = {}
        self._migrated = False
        self._lock = asyncio.Lock()
        """Keeps each scope's index in step with the file (held around every change)."""

    async def _known_scopes(self) -> list[str]:
        def read(connection: sqlite3.Connection) -> list[str]:
            rows = connection.execute(
                "SELECT scope FROM tool_memories UNION SELECT scope FROM text_memories"
            ).fetchall()
            return [str(row[0]) for row in rows]

        return await self._db.run(read)

    async def _index(self, scope: str, *, fresh: bool = False) -> ScopeIndex:
        async with self._lock:
            return await self._load(scope)

    async def _load(self, scope: str) -> ScopeIndex:
        index = self._scopes.get(scope)
        if index is not None:
            return index
        if not self._migrated:
            if dropped := await self._db.transaction(_migrate):
                logger.warning(
                    "agent memory: dropped %d memories saved before memories had owners "
                    "(no one could safely be offered them)",
                    dropped,
                )
            self._migrated = True

        def load(connection: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            tools = connection.execute(
                "SELECT id, question, tool_name, success, timestamp, ownership"
                " FROM tool_memories WHERE scope = ? ORDER BY seq",
                (scope,),
            ).fetchall()
            texts = connection.execute(
                "SELECT id, content, timestamp, ownership FROM text_memories"
                " WHERE scope = ? ORDER BY seq",
                (scope,),
            ).fetchall()
            return tools, texts

        tools, texts = await self._db.run(load)
        index = ScopeIndex(self._analyzer)
        for memory_id, question, tool_name, success, timestamp, owner in tools:
            entry = ToolEntry(
                question, tool_name, bool(success), timestamp, ownership_from_json(owner)
            )
            index.put_tool(memory_id, entry)
        for memory_id, content, timestamp, owner in texts:
            ownership = ownership_from_json(owner).model_dump()
            index.put_text(
                TextMemory(memory_id=memory_id, content=content, timestamp=timestamp, **ownership)
            )
        self._scopes[scope] = index
        return index

    async def _store_tool(self, scope: str, memory: ToolMemory, fingerprint: str) -> None:
        epoch = parse_timestamp(memory.timestamp or "").timestamp()
        entry = ToolEntry.of(memory)

        def write(connection: sqlite3.Connection) -> list[str]:
            found = connection.execute(
                "DELETE FROM tool_memories WHERE scope = ? AND fingerprint = ? RETURNING id",
                (scope, fingerprint),
            ).fetchone()
            if found:
                memory.memory_id = found[0]
            connection.execute(
                "INSERT INTO tool_memories (scope, id, fingerprint, question, tool_name,"
                " success, timestamp, epoch, body, ownership)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    scope,
                    memory.memory_id,
                    fingerprint,
                    memory.question,
                    memory.tool_name,
                    int(memory.success),
                    memory.timestamp,
                    epoch,
                    memory.model_dump_json(),
                    ownership_json(entry.owner),
                ),
            )
            return _trim(connection, "tool_memories", scope, self.max_items)

        async with self._lock:
            index = await self._load(scope)
            dropped = await self._db.transaction(write)
            index.put_tool(memory.memory_id or "", entry)
            for old in dropped:
                index.drop_tool(old)

    async def _store_text(self, scope: str, memory: TextMemory) -> None:
        owner = ownership_json(ownership_of(memory))

        def write(connection: sqlite3.Connection) -> list[str]:
            connection.execute(
                "DELETE FROM text_memories WHERE scope = ? AND id = ?", (scope, memory.memory_id)
            )
            connection.execute(
                "INSERT INTO text_memories (scope, id, content, timestamp, ownership)"
                " VALUES (?, ?, ?, ?, ?)",
                (scope, memory.memory_id, memory.content, memory.timestamp, owner),
            )
            return _trim(connection, "text_memories", scope, self.max_items)

        async with self._lock:
            index = await self._load(scope)
            dropped = await self._db.transaction(write)
            index.put_text(memory)
            for old in dropped:
                index.drop_text(old)

    async def _tool_bodies(self, scope: str, ids: list[str]) -> dict[str, ToolMemory]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = f"SELECT id, body FROM tool_memories WHERE scope = ? AND id IN ({marks})"
        rows = await self._db.run(lambda c: c.execute(sql, (scope, *ids)).fetchall())
        return {memory_id: ToolMemory.model_validate_json(body) for memory_id, body in rows}

    async def _drop(self, scope: str, kind: Kind, ids: list[str]) -> int:
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        sql = f"DELETE FROM {_TABLES[kind]} WHERE scope = ? AND id IN ({marks}) RETURNING id"
        async with self._lock:
            index = await self._load(scope)
            rows = await self._db.run(lambda c: c.execute(sql, (scope, *ids)).fetchall())
            drop = index.drop_tool if kind == "tool" else index.drop_text
            for (memory_id,) in rows:
                drop(memory_id)
        return len(rows)

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
