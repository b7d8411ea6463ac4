"""Expired rows on SQLite are deleted a bounded few at a time (``ExpiryPurge``).

Regression: the key/value store and the turn queue's dedupe keys deleted every expired row
at once every 256 writes, the dedupe keys by scanning their whole table (no index), inside
whichever write came 256th: that ack's enqueue paid for the whole backlog."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_core.schedules.testing import ManualClock
from agent_core.state.expiry_sqlite import PURGE_EVERY, PURGE_ROWS
from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
from agent_core.state.turns_sqlite import SqliteTurnQueue

BACKLOG = 200


def _count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_expired_key_value_rows_go_a_few_a_purge(tmp_path: Path) -> None:
    clock = ManualClock(1000.0)
    path = tmp_path / "state.db"
    store = SqliteKeyValueStore(path, table="kv", clock=clock.now)
    try:
        for n in range(BACKLOG):
            await store.set(f"old:{n:03}", n, ttl=60)
        await store.set("kept", "forever")
    finally:
        await store.close()
    clock.advance(61)  # the backlog expired while the process was stopped
    store = SqliteKeyValueStore(path, table="kv", clock=clock.now)
    try:
        assert await store.get("old:000") is None  # expired: absent before any purge
        for n in range(PURGE_EVERY):
            await store.set(f"new:{n:03}", n, ttl=60)
        left = _count(path, "kv") - PURGE_EVERY - 1
        assert BACKLOG - PURGE_ROWS <= left < BACKLOG  # one purge: a few rows, never all
        for n in range(PURGE_EVERY, BACKLOG):
            await store.set(f"new:{n:03}", n, ttl=60)
        assert _count(path, "kv") == BACKLOG + 1  # the purges went round: only live rows
        assert (await store.get("new:000"), await store.get("kept")) == (0, "forever")
    finally:
        await store.close()


async def test_expired_dedupe_keys_go_a_few_an_enqueue(tmp_path: Path) -> None:
    clock = ManualClock(1000.0)
    path = tmp_path / "turns.db"
    queue = SqliteTurnQueue(path, clock=clock.now)
    try:
        for n in range(BACKLOG):
            await queue.enqueue("t", {"n": n}, dedupe_key=f"Old{n:03}", dedupe_ttl=60)
    finally:
        await queue.close()
    clock.advance(61)
    queue = SqliteTurnQueue(path, clock=clock.now)
    try:
        for n in range(PURGE_EVERY):
            await queue.enqueue("t", {"n": n}, dedupe_key=f"New{n:03}", dedupe_ttl=60)
        left = _count(path, "turn_seen") - PURGE_EVERY
        assert BACKLOG - PURGE_ROWS <= left < BACKLOG
        for n in range(PURGE_EVERY, BACKLOG):
            await queue.enqueue("t", {"n": n}, dedupe_key=f"New{n:03}", dedupe_ttl=60)
        assert _count(path, "turn_seen") == BACKLOG
        assert await queue.enqueue("t", {"n": 0}, dedupe_key="Old199", dedupe_ttl=60)
        assert await queue.enqueue("t", {"n": 0}, dedupe_key="New199", dedupe_ttl=60) is None
    finally:
        await queue.close()


async def test_a_key_value_file_of_an_earlier_version_opens_with_its_rows(tmp_path: Path) -> None:
    """Its index of the expiry (one page more in every write's commit) is dropped; its rows,
    expiring or not, read as before."""
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as previous:
        previous.executescript(
            "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL)"
            " WITHOUT ROWID;"
            "CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;"
            """INSERT INTO kv VALUES ('kept', '"forever"', NULL), ('soon', '1', 1060.0),"""
            """ ('gone', '2', 1000.0);"""
        )
    store = SqliteKeyValueStore(path, table="kv", clock=ManualClock(1030.0).now)
    try:
        assert await store.get_many(["kept", "soon", "gone"]) == ["forever", 1, None]
        assert await store.add("gone", 3, ttl=60) and not await store.add("soon", 4, ttl=60)
    finally:
        await store.close()
    with sqlite3.connect(path) as reopened:
        indexes = reopened.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        assert "kv_expiry" not in {name for (name,) in indexes}
