"""``SqliteScheduleStore``: schedules in the state file of a single process (``state.db``)."""

from __future__ import annotations

import json
import sqlite3
from os import PathLike
from typing import Any

from agent_core.schedules.model import LastRun, Schedule
from agent_core.schedules.store import (
    ScheduleIdTaken,
    ScheduleLimitError,
    ScheduleLimits,
    ScheduleStore,
    assemble,
    definition,
    state_text,
    state_value,
)
from agent_core.state.sqlite import SqliteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    workspace TEXT NOT NULL,
    definition TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    paused_reason TEXT,
    next_due REAL NOT NULL,
    leased_until REAL NOT NULL DEFAULT 0,
    alert_state TEXT NOT NULL DEFAULT '',
    alert_for TEXT,
    alert_before TEXT,
    notices TEXT NOT NULL DEFAULT '[]',
    last_run TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (status, next_due);
CREATE INDEX IF NOT EXISTS schedules_owner ON schedules (owner, created_at);
CREATE INDEX IF NOT EXISTS schedules_workspace ON schedules (workspace, created_at);
CREATE TABLE IF NOT EXISTS schedule_pauses (workspace TEXT PRIMARY KEY) WITHOUT ROWID;
"""
_COLUMNS = "definition, status, paused_reason, next_due, alert_state, notices, last_run"


def _schedule(row: tuple[Any, ...]) -> Schedule:
    document, status, reason, next_due, alert, notices, last_run = row
    return assemble(
        document,
        status=status,
        paused_reason=reason,
        next_due=next_due,
        alert_state=state_value(alert),
        notices=json.loads(notices),
        last_run=last_run,
    )


class SqliteScheduleStore(ScheduleStore):
    """One row per schedule; each change is one statement or one transaction.

    >>> import asyncio, tempfile, os
    >>> store = SqliteScheduleStore(os.path.join(tempfile.mkdtemp(), "state.db"))
    >>> async def demo():
    ...     found = await store.due(0.0, limit=10)
    ...     await store.close()
    ...     return found
    >>> asyncio.run(demo())
    []
    """

    def __init__(self, database: SqliteDatabase | str | PathLike[str]) -> None:
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Schedule]:
        rows = await self._db.run(lambda c: c.execute(sql, params).fetchall())
        return [_schedule(row) for row in rows]

    async def add(self, schedule: Schedule, *, limits: ScheduleLimits) -> None:
        def insert(connection: sqlite3.Connection) -> None:
            count = "SELECT count(*) FROM schedules WHERE {} = ?"
            (mine,) = connection.execute(count.format("owner"), (schedule.owner,)).fetchone()
            if mine >= limits.per_person:
                raise ScheduleLimitError("person", limits.per_person)
            (theirs,) = connection.execute(
                count.format("workspace"), (schedule.workspace,)
            ).fetchone()
            if theirs >= limits.per_workspace:
                raise ScheduleLimitError("workspace", limits.per_workspace)
            taken = "SELECT 1 FROM schedules WHERE id = ?"
            if connection.execute(taken, (schedule.id,)).fetchone():
                raise ScheduleIdTaken(f"schedule {schedule.id} exists")
            connection.execute(
                "INSERT INTO schedules (id, owner, workspace, definition, created_at, status,"
                " paused_reason, next_due, alert_state, notices)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    schedule.id,
                    schedule.owner,
                    schedule.workspace,
                    definition(schedule),
                    schedule.created_at,
                    schedule.status,
                    schedule.paused_reason,
                    schedule.next_due,
                    state_text(schedule.alert_state),
                    json.dumps(sorted(schedule.notices)),
                ),
            )

        await self._db.transaction(insert)

    async def get(self, schedule_id: str) -> Schedule | None:
        found = await self._rows(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,))
        return found[0] if found else None

    async def owned_by(self, owner: str) -> list[Schedule]:
        return await self._rows(
            f"SELECT {_COLUMNS} FROM schedules WHERE owner = ? ORDER BY created_at, id", (owner,)
        )

    async def in_workspace(self, workspace: str) -> list[Schedule]:
        return await self._rows(
            f"SELECT {_COLUMNS} FROM schedules WHERE workspace = ? ORDER BY created_at, id",
            (workspace,),
        )

    async def every(self, *, limit: int = 10_000) -> list[Schedule]:
        return await self._rows(
            f"SELECT {_COLUMNS} FROM schedules ORDER BY created_at, id LIMIT ?", (limit,)
        )

    async def remove(self, schedule_id: str) -> bool:
        sql, args = "DELETE FROM schedules WHERE id = ?", (schedule_id,)
        return bool(await self._db.run(lambda c: c.execute(sql, args).rowcount))

    async def _update(self, schedule_id: str, assignments: str, params: tuple[Any, ...]) -> bool:
        sql = f"UPDATE schedules SET {assignments} WHERE id = ?"
        args = (*params, schedule_id)
        return bool(await self._db.run(lambda c: c.execute(sql, args).rowcount))

    async def pause(self, schedule_id: str, reason: str) -> Schedule | None:
        await self._update(schedule_id, "status = 'paused', paused_reason = ?", (reason,))
        return await self.get(schedule_id)

    async def resume(self, schedule_id: str, next_due: float) -> Schedule | None:
        await self._update(
            schedule_id,
            "status = 'active', paused_reason = NULL, next_due = ?, notices = '[]',"
            " leased_until = 0",
            (next_due,),
        )
        return await self.get(schedule_id)

    async def due(self, now: float, *, limit: int, lease: float = 0.0) -> list[Schedule]:
        chosen = (
            "SELECT id FROM schedules WHERE status = 'active' AND next_due <= ?"
            " AND leased_until <= ? ORDER BY next_due, id LIMIT ?"
        )
        if lease <= 0:
            return await self._rows(
                f"SELECT {_COLUMNS} FROM schedules WHERE id IN ({chosen}) ORDER BY next_due, id",
                (now, now, limit),
            )
        found = await self._rows(
            f"UPDATE schedules SET leased_until = ? WHERE id IN ({chosen}) RETURNING {_COLUMNS}",
            (now + lease, now, now, limit),
        )
        return sorted(found, key=lambda s: (s.next_due, s.id))

    async def advance(
        self, schedule_id: str, *, expected: float, next_due: float, last_run: LastRun | None
    ) -> bool:
        last = None if last_run is None else last_run.model_dump_json()
        sql = (
            "UPDATE schedules SET next_due = ?, last_run = coalesce(?, last_run),"
            " leased_until = 0 WHERE id = ? AND next_due = ?"
        )
        args = (next_due, last, schedule_id, expected)
        return bool(await self._db.run(lambda c: c.execute(sql, args).rowcount))

    async def record_run(self, schedule_id: str, last_run: LastRun) -> None:
        await self._update(schedule_id, "last_run = ?", (last_run.model_dump_json(),))

    async def swap_alert_state(
        self, schedule_id: str, holds: bool, *, occurrence: str
    ) -> bool | None:
        def swap(connection: sqlite3.Connection) -> bool | None:
            row = connection.execute(
                "SELECT alert_state, alert_for, alert_before FROM schedules WHERE id = ?",
                (schedule_id,),
            ).fetchone()
            if row is None:
                return None
            state, last_for, last_before = row
            before = last_before if last_for == occurrence else state
            connection.execute(
                "UPDATE schedules SET alert_state = ?, alert_for = ?, alert_before = ?"
                " WHERE id = ?",
                (state_text(holds), occurrence, before, schedule_id),
            )
            return state_value(before)

        return await self._db.transaction(swap)

    async def note_once(self, schedule_id: str, notice: str) -> bool:
        return await self._db.transaction(lambda c: _note(c, schedule_id, notice, add=True))

    async def forget_notice(self, schedule_id: str, notice: str) -> None:
        await self._db.transaction(lambda c: _note(c, schedule_id, notice, add=False))

    async def pause_workspace(self, workspace: str, paused: bool) -> None:
        sql = (
            "INSERT OR IGNORE INTO schedule_pauses VALUES (?)"
            if paused
            else "DELETE FROM schedule_pauses WHERE workspace = ?"
        )
        await self._db.run(lambda c: c.execute(sql, (workspace,)))

    async def paused_workspaces(self) -> frozenset[str]:
        rows = await self._db.run(
            lambda c: c.execute("SELECT workspace FROM schedule_pauses").fetchall()
        )
        return frozenset(row[0] for row in rows)

    async def earliest_due(self) -> float | None:
        row = await self._db.run(
            lambda c: c.execute(
                "SELECT min(next_due) FROM schedules WHERE status = 'active'"
            ).fetchone()
        )
        return None if row[0] is None else float(row[0])

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()


def _note(connection: sqlite3.Connection, schedule_id: str, notice: str, *, add: bool) -> bool:
    """Add (or drop) one notice of the schedule's list; True when the list changed."""
    sql = "SELECT notices FROM schedules WHERE id = ?"
    row = connection.execute(sql, (schedule_id,)).fetchone()
    if row is None:
        return False
    notices = set(json.loads(row[0]))
    if (notice in notices) == add:
        return False
    notices = notices | {notice} if add else notices - {notice}
    connection.execute(
        "UPDATE schedules SET notices = ? WHERE id = ?",
        (json.dumps(sorted(notices)), schedule_id),
    )
    return True
