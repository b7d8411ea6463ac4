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
