"""``SqliteRateLimiter``: sliding-window quotas that survive a restart (single process)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from os import PathLike

from agent_core.state.quotas import RateDecision, RateLimiter
from agent_core.state.sqlite import SqliteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rate_hits (key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS rate_hits_key_at ON rate_hits (key, at);
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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)
        self._clock = clock

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

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
