"""``SqliteUsageLedger``: LLM usage that survives a restart (one process per data directory).

One row per call in ``llm_usage`` of ``state.db``; summaries are ``GROUP BY`` over the days
asked for. Rows older than ``retention_days`` are pruned as new ones arrive.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from os import PathLike

from agent_core.state.sqlite import SqliteDatabase
from agent_core.usage.counts import KINDS
from agent_core.usage.ledger import (
    DIMENSIONS,
    NO_PROFILE,
    Dimension,
    Totals,
    UsageLedger,
    UsageRecord,
    UsageSummary,
    summarise,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_usage (
    day TEXT NOT NULL, at REAL NOT NULL, turn_id TEXT NOT NULL, person TEXT NOT NULL,
    profile TEXT, workspace TEXT, model TEXT NOT NULL, input INTEGER NOT NULL,
    cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL, output INTEGER NOT NULL,
    cost_nano INTEGER
);
CREATE INDEX IF NOT EXISTS llm_usage_day ON llm_usage (day);
CREATE INDEX IF NOT EXISTS llm_usage_turn ON llm_usage (turn_id);
"""

_COLUMN: dict[Dimension, str] = {
    "person": "person",
    "profile": f"coalesce(profile, '{NO_PROFILE}')",
    "workspace": "coalesce(workspace, '(none)')",
    "model": "model",
}

_SUMS = (
    "sum(input), sum(cache_read), sum(cache_write), sum(output), "
    "sum(coalesce(cost_nano, 0)), "
    "sum(CASE WHEN cost_nano IS NULL THEN input + cache_read + cache_write + output ELSE 0 END), "
    "count(*)"
)


def _totals(row: tuple[int, ...]) -> Totals:
    values = [int(value or 0) for value in row]
    return Totals.of(dict(zip([*KINDS, "cost", "unpriced", "calls"], values, strict=True)))


class SqliteUsageLedger(UsageLedger):
    """See the module docstring.

    >>> import asyncio, tempfile, os
    >>> ledger = SqliteUsageLedger(os.path.join(tempfile.mkdtemp(), "state.db"))
    >>> asyncio.run(ledger.turn("t1")).calls
    0
    """

    def __init__(
        self, database: SqliteDatabase | str | PathLike[str], *, retention_days: int = 400
    ) -> None:
        super().__init__()
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)
        self.retention_days = retention_days

    async def _store(self, record: UsageRecord) -> None:
        counts = record.tokens
        oldest = (record.day - dt.timedelta(days=self.retention_days)).isoformat()

        def insert(connection: sqlite3.Connection) -> None:
            connection.execute(
                "INSERT INTO llm_usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.day.isoformat(),
                    record.at.timestamp(),
                    record.turn_id,
                    record.person,
                    record.profile,
                    record.workspace,
                    record.model,
                    counts.input,
                    counts.cache_read,
                    counts.cache_write,
                    counts.output,
                    record.cost_nano,
                ),
            )
            connection.execute("DELETE FROM llm_usage WHERE day < ?", (oldest,))

        await self._db.transaction(insert)

    async def summary(self, first: dt.date, last: dt.date) -> UsageSummary:
        span = (first.isoformat(), last.isoformat())

        def read(connection: sqlite3.Connection) -> list[tuple[Dimension, str, Totals]]:
            rows: list[tuple[Dimension, str, Totals]] = []
            for dimension in DIMENSIONS:
                column = _COLUMN[dimension]
                found = connection.execute(
                    f"SELECT {column}, {_SUMS} FROM llm_usage "  # fixed column names, no input
                    f"WHERE day BETWEEN ? AND ? GROUP BY {column}",
                    span,
                ).fetchall()
                rows += [(dimension, str(key), _totals(tuple(sums))) for key, *sums in found]
            return rows

        return summarise(first, last, await self._db.run(read))

    async def turn(self, turn_id: str) -> Totals:
        def read(connection: sqlite3.Connection) -> Totals:
            row = connection.execute(
                f"SELECT {_SUMS} FROM llm_usage WHERE turn_id = ?", (turn_id,)
            ).fetchone()
            return _totals(tuple(row))

        return await self._db.run(read)

    async def prune_before(self, first_kept: dt.date) -> int:
        sql = "DELETE FROM llm_usage WHERE day < ?"
        return int(await self._db.run(lambda c: c.execute(sql, (first_kept.isoformat(),)).rowcount))

    async def pseudonymise(self, person: str, pseudonym: str, *, dry_run: bool = False) -> int:
        def write(connection: sqlite3.Connection) -> int:
            (count,) = connection.execute(
                "SELECT count(*) FROM llm_usage WHERE person = ?", (person,)
            ).fetchone()
            if not dry_run:
                connection.execute(
                    "UPDATE llm_usage SET person = ? WHERE person = ?", (pseudonym, person)
                )
            return int(count)

        return await self._db.transaction(write)

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
