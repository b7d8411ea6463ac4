"""``TurnQueue`` back ends: the shared contract plus restarts, crashes and outages."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.state.redis_client import connect_redis
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue
from agent_core.state.turns_redis import RedisTurnQueue
from agent_core.state.turns_sqlite import SqliteTurnQueue
from tests.state.turn_contract import (
    CLAIM_AFTER,
    Answers,
    TurnQueueContract,
    drained,
    killed_mid_turn,
    survivor_reruns,
    working,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis


class TestMemoryTurnQueue(TurnQueueContract):
    @pytest.fixture
    def queue(self) -> TurnQueue:
        return MemoryTurnQueue(claim_after=CLAIM_AFTER)


class TestSqliteTurnQueue(TurnQueueContract):
    @pytest.fixture
    async def queue(self, tmp_path: Path) -> AsyncIterator[TurnQueue]:
        queue = SqliteTurnQueue(tmp_path / "turns.db", claim_after=CLAIM_AFTER)
        yield queue
        await queue.close()


class TestRedisTurnQueue(TurnQueueContract):
    @pytest.fixture
    def queue(self, redis: Redis, key_prefix: str) -> TurnQueue:
        return RedisTurnQueue(redis, key_prefix=key_prefix, claim_after=CLAIM_AFTER)

    @pytest.fixture
    async def other_queue(self, redis_url: str, key_prefix: str) -> AsyncIterator[TurnQueue]:
        client = connect_redis(redis_url)  # another connection pool, as another process has
        yield RedisTurnQueue(client, key_prefix=key_prefix, claim_after=CLAIM_AFTER)
        await client.aclose()


async def test_sqlite_turns_survive_a_restart_and_resume_at_once(tmp_path: Path) -> None:
    """A turn running when the process died is re-run by the next start, immediately
    (not after ``claim_after``: nobody else could own it), with its progress."""
    path = tmp_path / "turns.db"
    queue = SqliteTurnQueue(path, claim_after=3600)
    await TurnQueueContract()._interrupt(queue)
    await queue.enqueue("t1", {"n": 1})
    await queue.close()

    restarted = SqliteTurnQueue(path, claim_after=3600)
    answers = Answers(2)
    try:
        async with working(restarted, answers):
            await answers.wait()
            await drained(restarted)
    finally:
        await restarted.close()
    assert [(t.payload["n"], t.attempt) for t in answers.turns] == [(0, 2), (1, 1)]
    assert answers.turns[0].progress == {"reply_ts": "111.222", "chunks": 2}


async def test_a_turn_of_a_killed_worker_process_finishes_on_another(
    redis: Redis, redis_url: str, key_prefix: str
) -> None:
    """``kill -9`` of the process running a turn: another worker claims it after
    ``claim_after``, sees what was already posted, and the thread's next turn follows."""
    queue = RedisTurnQueue(redis, key_prefix=key_prefix, claim_after=0.5)
    await queue.enqueue("slack:T1:C1:1.0", {"n": 0}, dedupe_key="Ev0")
    await queue.enqueue("slack:T1:C1:1.0", {"n": 1}, dedupe_key="Ev1")
    killed = await killed_mid_turn("tests.state.worker_process", redis_url, key_prefix, "0.5")
    await survivor_reruns(queue, killed)


async def test_one_owners_turns_wait_in_order_without_holding_anyone_elses() -> None:
    """Issue 22: one person's turns beyond ``per_owner`` hold no slot (here: in one thread,
    where they would also wait for each other), so another's turn runs at once."""

    from agent_core.state.turns import Turn
    from agent_core.state.turns_memory import MemoryTurnQueue

    queue = MemoryTurnQueue()
    release, ran, bo_done = asyncio.Event(), [], asyncio.Event()

    async def answer(turn: Turn) -> None:
        ran.append(turn.payload["n"])
        if turn.payload["n"] == "bo":
            bo_done.set()
        else:
            await release.wait()

    for n in range(6):
        await queue.enqueue("ana-thread", {"n": n}, owner="ana")
    await queue.enqueue("bo-thread", {"n": "bo"}, owner="bo")
    worker = asyncio.create_task(queue.run(answer, concurrency=2, per_owner=1))
    try:
        await asyncio.wait_for(bo_done.wait(), 5)
        assert ran == [0, "bo"]  # Ana's first, Bo's at once; Ana's others wait their turn
        release.set()
        async with asyncio.timeout(5):
            while await queue.pending():
                await asyncio.sleep(0.01)  # polling a store's state, with a deadline
        assert ran == [0, "bo", 1, 2, 3, 4, 5]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


_PREVIOUS_SCHEMA = """
CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread TEXT NOT NULL, payload TEXT NOT NULL,
    enqueued_at REAL NOT NULL, fetched INTEGER NOT NULL DEFAULT 0, owner TEXT,
    lease_until REAL, attempts INTEGER NOT NULL DEFAULT 0,
    progress TEXT NOT NULL DEFAULT '{}', owner_user TEXT
);
CREATE INDEX turns_by_thread ON turns (thread, id);
CREATE INDEX turns_new ON turns (fetched, id);
CREATE TABLE turn_seen (key TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
INSERT INTO turns (thread, payload, enqueued_at) VALUES ('t0', '{"n": 0}', 1.0);
INSERT INTO turns (thread, payload, enqueued_at, fetched, owner, lease_until, attempts)
    VALUES ('t1', '{"n": 1}', 1.0, 1, 'gone:1', 9e99, 1);
INSERT INTO turns (thread, payload, enqueued_at) VALUES ('t2', '{"n": 2}', 1.0);
DELETE FROM turns WHERE thread = 't2';
"""


async def test_a_database_of_the_previous_version_keeps_its_queued_turns(tmp_path: Path) -> None:
    """The file an earlier version wrote (its index of every turn by ``fetched``): the
    turn waiting for a fetch and the one a dead process held both run; ids keep growing."""
    path = tmp_path / "turns.db"
    with sqlite3.connect(path) as previous:
        previous.executescript(_PREVIOUS_SCHEMA)
    queue = SqliteTurnQueue(path, claim_after=3600)
    answers = Answers(3)
    try:
        async with working(queue, answers):
            assert await queue.enqueue("t3", {"n": 3}, dedupe_key="Ev3") == "4"
            await answers.wait()
            await drained(queue)
    finally:
        await queue.close()
    assert sorted((t.payload["n"], t.attempt) for t in answers.turns) == [(0, 1), (1, 2), (3, 1)]
    with sqlite3.connect(path) as reopened:
        indexes = reopened.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        assert "turns_new" not in {name for (name,) in indexes}


async def test_sqlite_turn_ids_are_never_given_twice(tmp_path: Path) -> None:
    """Ids name turns to the outside (Stop buttons, feedback on an answer): one completed,
    even the newest, or one given before a restart is never given again."""
    path = tmp_path / "turns.db"
    queue = SqliteTurnQueue(path, claim_after=3600)
    answers = Answers(2)
    async with working(queue, answers):
        given = [await queue.enqueue(f"t{n}", {"n": n}) for n in range(2)]
        await answers.wait()
        await drained(queue)
    given.append(await queue.enqueue("t2", {"n": 2}))
    await queue.close()
    restarted = SqliteTurnQueue(path, claim_after=3600)
    given.append(await restarted.enqueue("t3", {"n": 3}))
    await restarted.close()
    numbers = [int(turn_id or 0) for turn_id in given]
    assert numbers == sorted(set(numbers)) and numbers[:3] == [1, 2, 3]
    with sqlite3.connect(path) as reopened:
        tables = {name for (name,) in reopened.execute("SELECT name FROM sqlite_master")}
    assert "sqlite_sequence" not in tables  # no page of its own in each enqueue's commit
