"""``SqliteDatabase.write`` and ``read``: a short write commits at once on the caller's
thread when the database thread is idle, and writes that queue behind busy work share one
commit, each undone alone when it fails, each caller returning only once its write is
committed; a read runs at once too unless writes are queued before it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core.state.sqlite import SqliteDatabase


def _rows(path: Path) -> list[int]:
    """What another connection (another process, a restart) reads from the file."""
    with sqlite3.connect(path) as reader:
        return [row[0] for row in reader.execute("SELECT v FROM t ORDER BY v")]


async def _database(path: Path) -> SqliteDatabase:
    db = SqliteDatabase(path)
    db.ensure_schema("CREATE TABLE IF NOT EXISTS t (v INTEGER PRIMARY KEY)")
    await db.run(lambda c: c.execute("SELECT 1"))  # the schema is in place
    return db


async def test_an_idle_database_commits_a_write_on_the_callers_thread(tmp_path: Path) -> None:
    db = await _database(tmp_path / "x.db")
    threads: list[str] = []

    def insert(connection: sqlite3.Connection) -> None:
        threads.append(threading.current_thread().name)
        connection.execute("INSERT INTO t VALUES (1)")

    await db.write(insert)
    assert threads == [threading.current_thread().name]
    assert _rows(tmp_path / "x.db") == [1]  # committed when write returned
    await db.close()


async def test_writes_queued_behind_busy_work_share_one_commit(tmp_path: Path) -> None:
    db = await _database(tmp_path / "x.db")
    release = threading.Event()
    busy = asyncio.create_task(db.run(lambda _: release.wait(5)))
    await asyncio.sleep(0.05)  # the database thread is busy: writes must queue

    seen_outside: list[list[int]] = []

    def insert(value: int) -> Callable[[sqlite3.Connection], int]:
        def write(connection: sqlite3.Connection) -> int:
            seen_outside.append(_rows(tmp_path / "x.db"))  # what is committed so far
            return int(connection.execute("INSERT INTO t VALUES (?)", (value,)).rowcount)

        return write

    def fails(connection: sqlite3.Connection) -> None:
        connection.execute("INSERT INTO t VALUES (99)")
        raise ValueError("refused")

    writes = [asyncio.create_task(db.write(insert(n))) for n in (1, 2)]
    failing = asyncio.create_task(db.write(fails))
    writes.append(asyncio.create_task(db.write(insert(3))))
    await asyncio.sleep(0.05)
    assert not any(task.done() for task in [*writes, failing])  # none returns before its commit
    release.set()
    assert await asyncio.gather(*writes) == [1, 1, 1]
    with pytest.raises(ValueError, match="refused"):
        await failing
    await busy
    assert seen_outside == [[], [], []]  # one transaction: none committed before the last
    assert _rows(tmp_path / "x.db") == [1, 2, 3]  # the failed write alone was undone
    await db.close()


async def test_a_read_runs_on_the_callers_thread_unless_it_would_overtake_a_write(
    tmp_path: Path,
) -> None:
    """An idle database reads at once; one whose thread is busy queues the read behind
    the writes queued before it, so it sees them."""
    db = await _database(tmp_path / "x.db")
    threads: list[str] = []

    def count(connection: sqlite3.Connection) -> int:
        threads.append(threading.current_thread().name)
        return int(connection.execute("SELECT count(*) FROM t").fetchone()[0])

    await db.write(lambda c: c.execute("INSERT INTO t VALUES (1)"))
    assert await db.read(count) == 1
    release = threading.Event()
    busy = asyncio.create_task(db.run(lambda _: release.wait(5)))
    await asyncio.sleep(0.05)  # the database thread is busy: the write queues
    written = asyncio.create_task(db.write(lambda c: c.execute("INSERT INTO t VALUES (2)")))
    read = asyncio.create_task(db.read(count))
    await asyncio.sleep(0.05)
    assert not read.done()
    release.set()
    await asyncio.gather(busy, written)
    assert await read == 2
    assert threads[0] == threading.current_thread().name != threads[1]
    await db.close()
