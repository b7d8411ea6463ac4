"""``SqliteRateLimiter``: sliding-window quotas that survive a restart (single process)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from os import PathLike

from agent_core.clock import SYSTEM_CLOCK
from agent_core.state.quotas import RateDecision, RateLimiter
from agent_core.state.sqlite import SqliteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rate_hits (key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS rate_hits_key_at ON rate_hits (key, at);
CREATE TABLE IF NOT EXISTS quota_spend (
    key TEXT PRIMARY KEY, amount INTEGER NOT NULL, expires_at REAL NOT NULL
);
"""


class SqliteRateLimiter(RateLimiter):
    """One row per counted hit; each ``hit`` is one transaction (prune, count, insert).

    >>> import asyncio, tempfile, os
    >>> limiter = SqliteRateLimiter(os.path.join(tempfile.mkdtemp(), "state.db"))
    >>> async def demo():
    ...     decisions = [await limiter.hit("u1", limit=1, window=60) for _ in range(2)]
    ...     await limiter.close()
    ...     return [d.allowed for d in decisions]
    >>> asyncio.run(demo())
    [True, False]
    """

    def __init__(
        self,
        database: SqliteDatabase | str | PathLike[str],
        *,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
        wall_clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)
        self._clock = clock
        self._wall_clock = wall_clock

    async def hit(self, key: str, *, limit: int, window: float) -> RateDecision:
        now = self._clock()

        def decide(connection: sqlite3.Connection) -> RateDecision:
            connection.execute(
                "DELETE FROM rate_hits WHERE key = ? AND at <= ?", (key, now - window)
            )
            count, oldest = connection.execute(
                "SELECT count(*), min(at) FROM rate_hits WHERE key = ?", (key,)
            ).fetchone()
            if count >= limit:
                return RateDecision(False, 0, oldest + window - now)
            connection.execute("INSERT INTO rate_hits VALUES (?, ?)", (key, now))
            return RateDecision(True, limit - count - 1)

        return await self._db.transaction(decide)

    async def spend(self, key: str, amount: int, *, ttl: float) -> int:
        now = self._wall_clock()
        expires_at = now + ttl

        def add(connection: sqlite3.Connection) -> int:
            connection.execute("DELETE FROM quota_spend WHERE expires_at <= ?", (now,))
            row = connection.execute(
                "INSERT INTO quota_spend VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE "
                "SET amount = amount + excluded.amount, expires_at = excluded.expires_at "
                "RETURNING amount",
                (key, amount, expires_at),
            ).fetchone()
            return int(row[0])

        return await self._db.transaction(add)

    async def spent(self, keys: Sequence[str]) -> list[int]:
        now = self._wall_clock()

        def read(connection: sqlite3.Connection) -> list[int]:
            marks = ", ".join("?" for _ in keys)
            found = dict(
                connection.execute(
                    f"SELECT key, amount FROM quota_spend WHERE key IN ({marks}) "
                    "AND expires_at > ?",
                    (*keys, now),
                ).fetchall()
            )
            return [int(found.get(key, 0)) for key in keys]

        return await self._db.run(read) if keys else []

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
