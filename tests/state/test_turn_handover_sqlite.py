"""On SQLite a turn recorded while this process's worker has a free slot is handed to it by
the enqueue's own transaction (recorded as fetched by that worker, and begun when first in
its thread): no fetch, no ``begin``, no write after the ack. Order, the asker's cap and
crash recovery hold as before."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.state.turn_backend import Delivery, Start
from agent_core.state.turns import Turn
from agent_core.state.turns_sqlite import SqliteTurnQueue
from tests.state.turn_contract import DEADLINE, Answers, drained, working


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[SqliteTurnQueue]:
    queue = SqliteTurnQueue(tmp_path / "turns.db", claim_after=30)
    yield queue
    await queue.close()


async def attached(queue: SqliteTurnQueue) -> None:
    """Until the worker started in the block is the queue's intake."""
    async with asyncio.timeout(DEADLINE):
        while not queue._intakes:
            await asyncio.sleep(0.001)  # polling the worker's start, with a deadline


class Counted:
    """The queue's ``fetch`` and ``begin``, counting the turns they hand out."""

    def __init__(self, queue: SqliteTurnQueue) -> None:
        self.fetched = 0
        self.begun = 0
        fetch, begin = queue.fetch, queue.begin

        async def counted_fetch(consumer: str, count: int, timeout: float) -> list[Delivery]:
            found = await fetch(consumer, count, timeout)
            self.fetched += len(found)
            return found

        async def counted_begin(delivery: Delivery, consumer: str) -> Start:
            self.begun += 1
            return await begin(delivery, consumer)

        queue.fetch = counted_fetch  # type: ignore[method-assign]
        queue.begin = counted_begin  # type: ignore[method-assign]


async def test_a_turn_recorded_here_runs_without_a_fetch_or_a_begin(
    queue: SqliteTurnQueue,
) -> None:
    counted = Counted(queue)
    answers = Answers(5)
    async with working(queue, answers):
        await attached(queue)
        for n in range(5):
            await queue.enqueue(f"thread-{n}", {"n": n}, dedupe_key=f"Ev{n}", owner="U1")
            async with asyncio.timeout(DEADLINE):
                while len(answers.turns) <= n:
                    await asyncio.sleep(0.001)  # polling the handler's record, with a deadline
        await drained(queue)
    assert [(t.payload["n"], t.attempt) for t in answers.turns] == [(n, 1) for n in range(5)]
    assert (counted.fetched, counted.begun) == (0, 0)


async def test_turns_handed_over_behind_an_unfinished_one_keep_the_thread_order(
    queue: SqliteTurnQueue,
) -> None:
    """The thread's later turns are handed over too, and wait for its first one."""
    release = asyncio.Event()

    async def first_is_slow(turn: Turn) -> None:
        if turn.payload["n"] == 0:
            await release.wait()

    counted = Counted(queue)
    answers = Answers(4, first_is_slow)
    async with working(queue, answers):
        await attached(queue)
        for n in range(4):
            await queue.enqueue("thread", {"n": n})
        await asyncio.sleep(0.05)  # give a wrong order the chance to happen
        assert answers.turns == []
        release.set()
        await answers.wait()
        await drained(queue)
    assert answers.by_thread["thread"] == [0, 1, 2, 3] and answers.overlaps == 0
    assert counted.fetched == 0 and [t.attempt for t in answers.turns] == [1, 1, 1, 1]


async def test_an_asker_at_their_cap_waits_for_a_fetch(queue: SqliteTurnQueue) -> None:
    """No slot is held for a turn beyond its asker's cap: it is left to a fetch."""
    release = asyncio.Event()

    async def hold(turn: Turn) -> None:
        await release.wait()

    counted = Counted(queue)
    answers = Answers(2, hold)
    async with working(queue, answers, per_owner=1):
        await attached(queue)
        await queue.enqueue("thread-a", {"n": 0}, owner="U1")
        await queue.enqueue("thread-b", {"n": 1}, owner="U1")
        release.set()
        await answers.wait()
        await drained(queue)
    assert counted.fetched == 1 and sorted(answers.by_thread) == ["thread-a", "thread-b"]


class Died:
    """An intake whose process dies after the enqueue commits, before the turn runs."""

    consumer = "gone:1"

    def reserve(self, owner: str | None) -> bool:
        return True

    def unreserve(self, owner: str | None) -> None:
        """The duplicate delivery's slot back."""

    def take(self, delivery: Delivery, start: Start | None) -> None:
        """kill -9 here: nothing runs it."""


async def test_a_turn_handed_to_a_process_that_died_runs_at_the_next_start(
    tmp_path: Path,
) -> None:
    """Recorded and begun for a worker killed before it ran: the next start claims it at
    once and runs it, as a retry (its first attempt was counted)."""
    path = tmp_path / "turns.db"
    dead = SqliteTurnQueue(path, claim_after=3600)
    with dead.attach(Died()):
        await dead.enqueue("thread", {"n": 0}, dedupe_key="Ev0")
        await dead.enqueue("thread", {"n": 1}, dedupe_key="Ev1")
        assert await dead.enqueue("thread", {"n": 1}, dedupe_key="Ev1") is None
    await dead.close()

    restarted = SqliteTurnQueue(path, claim_after=3600)
    answers = Answers(2)
    try:
        async with working(restarted, answers):
            await answers.wait()
            await drained(restarted)
    finally:
        await restarted.close()
    assert [(t.payload["n"], t.attempt) for t in answers.turns] == [(0, 2), (1, 1)]


async def test_a_turn_waiting_for_a_fetch_is_not_overtaken(queue: SqliteTurnQueue) -> None:
    """While an older turn waits for a fetch, a new one is not handed over ahead of it."""
    taken: list[tuple[Delivery, Start | None]] = []

    class Here:
        consumer = "here:1"

        def reserve(self, owner: str | None) -> bool:
            return True

        def unreserve(self, owner: str | None) -> None:
            taken.append((Delivery("-", "-", {}, 0.0), None))

        def take(self, delivery: Delivery, start: Start | None) -> None:
            taken.append((delivery, start))

    await queue.enqueue("first", {"n": 0})
    with queue.attach(Here()):
        await queue.enqueue("second", {"n": 1})
    fetched: list[Any] = await queue.fetch("other", 10, 0.01)
    assert [d.payload["n"] for d in fetched] == [0, 1]
    assert [d.id for d, _ in taken] == ["-"]  # the slot given back


async def test_an_enqueue_cancelled_while_its_write_queues_still_hands_the_turn_over(
    queue: SqliteTurnQueue,
) -> None:
    """Its caller gave up, but the write stands: the turn goes to the worker that held a
    slot for it (else nobody in this process would ever run it)."""
    taken: list[tuple[Delivery, Start | None]] = []

    class Here:
        consumer = "here:1"

        def reserve(self, owner: str | None) -> bool:
            return True

        def unreserve(self, owner: str | None) -> None:
            raise AssertionError("the turn was recorded: its slot is its own")

        def take(self, delivery: Delivery, start: Start | None) -> None:
            taken.append((delivery, start))

    release = threading.Event()
    with queue.attach(Here()):
        await queue.enqueue("earlier", {"n": -1})  # handed over at once (the database idle)
        busy = asyncio.create_task(queue._db.run(lambda _: release.wait(5)))
        await asyncio.sleep(0.05)  # the database thread is busy: the next write queues
        enqueue = asyncio.create_task(queue.enqueue("thread", {"n": 0}))
        await asyncio.sleep(0.05)
        enqueue.cancel()
        with pytest.raises(asyncio.CancelledError):
            await enqueue
        release.set()
        await busy
        async with asyncio.timeout(DEADLINE):
            while len(taken) < 2:
                await asyncio.sleep(0.005)  # polling the hand-over, with a deadline
    delivery, start = taken[1]
    assert delivery.payload == {"n": 0} and start is not None and start.attempt == 1
    assert await queue.pending() == 2
