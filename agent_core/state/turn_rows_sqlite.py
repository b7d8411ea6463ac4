"""The rows of the SQLite turn queue: its tables (and what they make of a file an earlier
version wrote), a turn as the enqueue records it, and turns as a fetch or claim reads them.

``turns`` holds every unfinished turn, in id order (ids from ``TurnIds``); a turn waiting
for a fetch is in the partial index ``turns_waiting``, one handed over (``SqliteTurnQueue``:
fetched by a worker of this process in the enqueue's own transaction) never is.
``turn_seen`` holds the delivery dedupe keys until they expire (then ``ExpiryPurge``). A
file of an earlier version (``AUTOINCREMENT`` ids, an index of every turn by ``fetched``)
opens with its rows: its old index is dropped, the new one is built, and ``TurnIds``
continues after the ids it counted.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Literal, NamedTuple

from agent_core.state.turn_backend import Delivery

SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY, -- from TurnIds (earlier versions: AUTOINCREMENT)
    thread TEXT NOT NULL,
    payload TEXT NOT NULL,
    enqueued_at REAL NOT NULL,
    fetched INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    progress TEXT NOT NULL DEFAULT '{}',
    owner_user TEXT
);
CREATE INDEX IF NOT EXISTS turns_by_thread ON turns (thread, id);
-- only the turns waiting for a fetch (one handed over never enters it); it replaces the
-- index of every turn by (fetched, id) of earlier versions
DROP INDEX IF EXISTS turns_new;
CREATE INDEX IF NOT EXISTS turns_waiting ON turns (id) WHERE fetched = 0;
CREATE TABLE IF NOT EXISTS turn_seen (key TEXT PRIMARY KEY, expires_at REAL NOT NULL)
    WITHOUT ROWID;
"""
COLUMNS = "id, thread, payload, enqueued_at, owner_user"
SEEN = (
    "INSERT INTO turn_seen VALUES (?, ?) ON CONFLICT (key)"
    " DO UPDATE SET expires_at = excluded.expires_at WHERE expires_at <= ?"
)
"""A dedupe key recorded: one change when it is new or its last sighting expired."""


_INSERT = "INSERT INTO turns (id, thread, payload, enqueued_at, owner_user) VALUES (?, ?, ?, ?, ?)"
_INSERT_HANDED = (
    "INSERT INTO turns (id, thread, payload, enqueued_at, owner_user, fetched, owner,"
    " lease_until, attempts) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)"
)
"""A turn recorded as fetched by a worker of this process (and begun, ``attempts`` 1)."""
Handed = Literal["no", "waits", "runs"]
"""Whether an enqueue handed its turn to a worker here: no (a fetch takes it), to wait for
its thread's earlier turns (``begin``), or begun (the first in its thread)."""


class Recorded(NamedTuple):
    """A turn the enqueue's transaction recorded, and whether it handed it over."""

    id: str
    thread_key: str
    text: str
    at: float
    handed: Handed

    def delivery(self, owner: str | None) -> Delivery:
        return Delivery(self.id, self.thread_key, json.loads(self.text), self.at, owner)


def _handing(connection: sqlite3.Connection, thread_key: str) -> Handed:
    """What an enqueue with a worker's slot held does with its turn: hand it over unless
    older turns wait for a fetch (they go first), and begin it when its thread has no
    earlier turn."""
    if connection.execute("SELECT 1 FROM turns WHERE fetched = 0 LIMIT 1").fetchone():
        return "no"
    older = connection.execute("SELECT 1 FROM turns WHERE thread = ? LIMIT 1", (thread_key,))
    return "waits" if older.fetchone() else "runs"


def insert(
    connection: sqlite3.Connection,
    row: tuple[int, str, str, float, str | None],
    holder: tuple[str, float] | None,
) -> Handed:
    """Insert the turn (id, thread, payload, time, asker); fetched by ``holder`` (a worker's
    consumer and lease) when ``_handing`` lets it hand the turn over."""
    handed: Handed = "no" if holder is None else _handing(connection, row[1])
    if holder is None or handed == "no":
        connection.execute(_INSERT, row)
    else:
        connection.execute(_INSERT_HANDED, (*row, *holder, int(handed == "runs")))
    return handed


def deliveries(rows: list[Any]) -> list[Delivery]:
    """The turns of ``rows`` (``COLUMNS``, as a fetch or claim returns them), in id order."""
    found = [Delivery(str(i), t, json.loads(p), at, who) for i, t, p, at, who in rows]
    return sorted(found, key=lambda d: int(d.id))
