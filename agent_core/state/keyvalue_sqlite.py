"""``SqliteKeyValueStore``: the key/value store in an SQLite table (single process)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

from agent_core.clock import SYSTEM_CLOCK
from agent_core.state.expiry_sqlite import ExpiryPurge
from agent_core.state.keyvalue import KeyValueStore, Push, Put, encode
from agent_core.state.sqlite import SqliteDatabase

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SqliteKeyValueStore(KeyValueStore):
    """Key/value rows in ``table`` of an SQLite file; expiry is wall-clock, so it survives
    restarts. Pass a path (the store owns the file) or a shared ``SqliteDatabase``.

    >>> import asyncio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "state.db")
    >>> async def demo():
    ...     store = SqliteKeyValueStore(path, table="installations")
    ...     await store.set("slack:T1", {"bot_token": "xoxb-1"})
    ...     await store.close()
    ...     reopened = SqliteKeyValueStore(path, table="installations")
    ...     try:
    ...         return await reopened.get("slack:T1")
    ...     finally:
    ...         await reopened.close()
    >>> asyncio.run(demo())
    {'bot_token': 'xoxb-1'}
    """

    def __init__(
        self,
        database: SqliteDatabase | str | PathLike[str],
        *,
        table: str = "kv",
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        if not _IDENTIFIER.fullmatch(table):
            raise ValueError(f"not a valid table name: {table!r}")
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._table = table
        self._clock = clock
        self._purge = ExpiryPurge(table)
        self._db.ensure_schema(
            f"CREATE TABLE IF NOT EXISTS {table} ("
            " key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL) WITHOUT ROWID;"
            # expired rows go by ExpiryPurge's walk in key order: an index of the expiry
            # (earlier versions) would cost a page in every write's commit
            f"DROP INDEX IF EXISTS {table}_expiry;"
        )

    def _expiry(self, ttl: float | None) -> float | None:
        return None if ttl is None else self._clock() + ttl

    async def get(self, key: str) -> Any | None:
        sql = f"SELECT value FROM {self._table} WHERE key = ? AND ifnull(expires_at > ?, 1)"
        row = await self._db.read(lambda c: c.execute(sql, (key, self._clock())).fetchone())
        return None if row is None else json.loads(row[0])

    async def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        marks = ", ".join("?" * len(keys))
        sql = (
            f"SELECT key, value FROM {self._table} WHERE key IN ({marks})"
            " AND ifnull(expires_at > ?, 1)"
        )
        rows = await self._db.run(lambda c: c.execute(sql, (*keys, self._clock())).fetchall())
        found = {str(key): text for key, text in rows}
        return [json.loads(found[key]) if key in found else None for key in keys]

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await self._db.write(lambda c: self._set_in(c, key, value, ttl))

    def _set_in(
        self, connection: sqlite3.Connection, key: str, value: Any, ttl: float | None
    ) -> None:
        connection.execute(
            f"INSERT OR REPLACE INTO {self._table} VALUES (?, ?, ?)",
            (key, encode(value), self._expiry(ttl)),
        )
        self._purge.after_write(connection, self._clock())

    async def write_all(self, writes: Sequence[Put | Push]) -> None:
        """One transaction."""

        def write(connection: sqlite3.Connection) -> None:
            for each in writes:
                if isinstance(each, Push):
                    items = [json.loads(encode(item)) for item in each.items]
                    self._append_in(connection, each.key, items, each.keep, each.ttl)
                elif each.only_new:
                    self.add_in(connection, each.key, each.value, ttl=each.ttl)
                else:
                    self._set_in(connection, each.key, each.value, each.ttl)

        await self._db.write(write)

    async def add(self, key: str, value: Any = True, *, ttl: float | None = None) -> bool:
        return await self._db.write(lambda c: self.add_in(c, key, value, ttl=ttl))

    def add_in(
        self, connection: sqlite3.Connection, key: str, value: Any, *, ttl: float | None
    ) -> bool:
        """``add`` inside the caller's transaction on this store's database (a turn queue
        recording a turn with its ``Flag``)."""
        text, expires_at = encode(value), self._expiry(ttl)
        cursor = connection.execute(  # new, or replacing an expired row
            f"INSERT INTO {self._table} VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
            " SET value = excluded.value, expires_at = excluded.expires_at WHERE expires_at <= ?",
            (key, text, expires_at, self._clock()),
        )
        self._purge.after_write(connection, self._clock())
        return cursor.rowcount == 1

    async def _append(self, key: str, added: list[Any], keep: int, ttl: float | None) -> list[Any]:
        """The log as one JSON row, read and rewritten in one transaction."""
        return await self._db.write(lambda c: self._append_in(c, key, added, keep, ttl))

    def _append_in(
        self,
        connection: sqlite3.Connection,
        key: str,
        added: list[Any],
        keep: int,
        ttl: float | None,
    ) -> list[Any]:
        sql = f"SELECT value FROM {self._table} WHERE key = ? AND ifnull(expires_at > ?, 1)"
        row = connection.execute(sql, (key, self._clock())).fetchone()
        log: list[Any] = [] if row is None else json.loads(row[0])
        if not added:
            return log
        log = (log + added)[-keep:]
        self._set_in(connection, key, log, ttl)
        return log

    def shares(self, database: SqliteDatabase) -> bool:
        """Whether this store lives in ``database`` (so one transaction can cover both)."""
        return self._db is database

    async def delete(self, key: str) -> None:
        await self._db.write(
            lambda c: c.execute(f"DELETE FROM {self._table} WHERE key = ?", (key,))
        )

    async def keys(self, pattern: str) -> list[str]:
        def read(connection: sqlite3.Connection) -> list[str]:
            rows = connection.execute(
                f"SELECT key FROM {self._table} WHERE key GLOB ? "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (pattern, self._clock()),
            ).fetchall()
            return [str(row[0]) for row in rows]

        return await self._db.run(read)

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
