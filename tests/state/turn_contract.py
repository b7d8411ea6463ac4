"""The ``TurnQueue`` contract, run against memory, SQLite and Redis.

Subclass ``TurnQueueContract`` and override ``queue`` (a fresh, empty queue with a short
``claim_after``) and ``other_queue`` (the same queue as another process would see it).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_core.state.turns import Turn, TurnHandler, TurnQueue

CLAIM_AFTER = 0.3
DEADLINE = 10.0
REPO_ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def working(queue: TurnQueue, handler: TurnHandler, **options: Any) -> AsyncIterator[None]:
    """A worker running ``handler`` for the duration of the block."""
    worker = asyncio.create_task(queue.run(handler, **options))
    try:
        yield
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


class Answers:
    """A handler that records who ran what, in which order, and how many at once."""

    def __init__(self, expected: int, work: Callable[[Turn], Awaitable[None]] | None = None):
        self.expected = expected
        self.turns: list[Turn] = []
        self.by_thread: dict[str, list[int]] = defaultdict(list)
        self.active: Counter[str] = Counter()
        self.overlaps = 0
        self.done = asyncio.Event()
        self._work = work

    async def __call__(self, turn: Turn) -> None:
        self.active[turn.thread_key] += 1
        self.overlaps += self.active[turn.thread_key] > 1
        try:
            for _ in range(3):
                await asyncio.sleep(0)  # yield: let other turns interleave if they could
            if self._work is not None:
                await self._work(turn)
            self.turns.append(turn)
            self.by_thread[turn.thread_key].append(turn.payload.get("n", -1))
        finally:
            self.active[turn.thread_key] -= 1
        if len(self.turns) >= self.expected:
            self.done.set()

    async def wait(self) -> None:
        await asyncio.wait_for(self.done.wait(), DEADLINE)


async def drained(queue: TurnQueue) -> None:
    """Wait (bounded) until every turn is completed; completion follows the handler."""
    async with asyncio.timeout(DEADLINE):
        while await queue.pending():
            await asyncio.sleep(0.005)  # polling a store's state, with a deadline


async def killed_mid_turn(module: str, *args: str) -> int:
    """Run ``python -m module *args``, a worker that prints ``STARTED`` once inside a turn;
    SIGKILL it there (no cleanup, no ack, its lease left to expire). Its pid."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *args, stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        assert line.startswith(b"STARTED "), line
    finally:
        process.kill()
        await process.wait()
    return process.pid


async def survivor_reruns(queue: TurnQueue, killed: int) -> None:
    """Another worker takes the killed one's turn over once, with what it recorded (its
    ``posted_by`` and ``reply_ts``), then runs the thread's next turn after it."""
    answers = Answers(2)
    async with working(queue, answers, consumer="survivor"):
        await answers.wait()
        await drained(queue)
    rerun, following = answers.turns
    assert (rerun.payload["n"], rerun.attempt) == (0, 2)
    assert rerun.progress == {"posted_by": killed, "reply_ts": "1700000000.000100"}
    assert (following.payload["n"], following.attempt) == (1, 1)
    assert answers.overlaps == 0


class TurnQueueContract:
    @pytest.fixture
    def queue(self) -> TurnQueue:
        raise NotImplementedError

    @pytest.fixture
    def other_queue(self, queue: TurnQueue) -> TurnQueue:
        return queue

    async def test_a_retried_delivery_is_enqueued_once(self, queue: TurnQueue) -> None:
        first = await queue.enqueue("t1", {"n": 1}, dedupe_key="slack:Ev1")
        assert first is not None
        assert await queue.enqueue("t1", {"n": 1}, dedupe_key="slack:Ev1") is None
        assert await queue.enqueue("t1", {"n": 2}) is not None
        assert await queue.pending() == 2

    async def test_payloads_must_be_json(self, queue: TurnQueue) -> None:
        with pytest.raises(TypeError):
            await queue.enqueue("t1", {"n": object()})

    async def test_turns_run_once_and_complete(self, queue: TurnQueue) -> None:
        for n in range(3):
            await queue.enqueue(f"t{n}", {"n": n})
        answers = Answers(3)
        async with working(queue, answers):
            await answers.wait()
            await drained(queue)
        assert sorted(t.payload["n"] for t in answers.turns) == [0, 1, 2]
        assert {t.attempt for t in answers.turns} == {1}

    async def test_threads_are_answered_in_order_across_two_workers(
        self, queue: TurnQueue, other_queue: TurnQueue
    ) -> None:
        """Two messages in one thread are answered in order, one at a time, whichever
        worker picks each up; different threads run in parallel."""
        threads, per_thread = 5, 6
        answers = Answers(threads * per_thread)
        async with (
            working(queue, answers, concurrency=4, consumer="one"),
            working(other_queue, answers, concurrency=4, consumer="two"),
        ):
            for n in range(per_thread):
                for t in range(threads):
                    await queue.enqueue(f"thread-{t}", {"n": n})
            await answers.wait()
            await drained(queue)
        assert answers.overlaps == 0
        assert dict(answers.by_thread) == {
            f"thread-{t}": list(range(per_thread)) for t in range(threads)
        }

    async def test_a_failing_handler_completes_its_turn(self, queue: TurnQueue) -> None:
        async def fail_first(turn: Turn) -> None:
            if turn.payload["n"] == 0:
                raise RuntimeError("handler bug")

        answers = Answers(1, fail_first)
        await queue.enqueue("t1", {"n": 0})
        await queue.enqueue("t1", {"n": 1})
        async with working(queue, answers):
            await answers.wait()
            await drained(queue)
        assert [t.payload["n"] for t in answers.turns] == [1]

    async def _interrupt(self, queue: TurnQueue) -> None:
        """Start a turn that records progress, then kill its worker mid-turn."""
        recorded = asyncio.Event()

        async def crash_midway(turn: Turn) -> None:
            await turn.record(reply_ts="111.222", chunks=2)
            recorded.set()
            await asyncio.Event().wait()  # never finishes: its worker is about to die

        await queue.enqueue("t1", {"n": 0})
        async with working(queue, crash_midway, consumer="doomed"):
            await asyncio.wait_for(recorded.wait(), DEADLINE)

    async def test_an_interrupted_turn_is_rerun_with_its_progress(
        self, queue: TurnQueue, other_queue: TurnQueue
    ) -> None:
        await self._interrupt(queue)
        await queue.enqueue("t1", {"n": 1})
        answers = Answers(2)
        async with working(other_queue, answers, consumer="survivor"):
            await answers.wait()
            await drained(queue)
        rerun, after = answers.turns
        assert rerun.payload == {"n": 0} and rerun.attempt == 2 and rerun.is_retry
        assert rerun.progress == {"reply_ts": "111.222", "chunks": 2}
        assert after.payload == {"n": 1} and after.attempt == 1 and after.progress == {}

    async def test_give_up_after_max_attempts(
        self, queue: TurnQueue, other_queue: TurnQueue
    ) -> None:
        await self._interrupt(queue)
        answers, gave_up = Answers(1), Answers(1)
        async with working(other_queue, answers, max_attempts=1, give_up=gave_up):
            await gave_up.wait()
            await drained(queue)
        assert answers.turns == []
        [turn] = gave_up.turns
        assert turn.attempt == 2 and turn.progress["reply_ts"] == "111.222"

    async def test_a_long_turn_keeps_its_lease(
        self, queue: TurnQueue, other_queue: TurnQueue
    ) -> None:
        """A turn running longer than ``claim_after`` is renewed, never run twice."""
        started, release = asyncio.Event(), asyncio.Event()

        async def slow(turn: Turn) -> None:
            started.set()
            await release.wait()

        other = Answers(1)
        await queue.enqueue("t1", {"n": 0})
        async with working(queue, slow, consumer="slow"):
            await asyncio.wait_for(started.wait(), DEADLINE)
            async with working(other_queue, other, consumer="idle"):
                with pytest.raises(TimeoutError):  # nothing may happen for 4 claim periods
                    await asyncio.wait_for(other.done.wait(), 4 * CLAIM_AFTER)
            release.set()
            await drained(queue)
        assert other.turns == []

    async def test_only_the_owner_can_stop_a_turn_which_then_completes(
        self, queue: TurnQueue, other_queue: TurnQueue
    ) -> None:
        """Stop reaches the worker running the turn, from any process; the handler settles
        (like the bots' "stopped" reply) and the thread moves on; nobody else can stop it."""
        started, cancelled = asyncio.Event(), asyncio.Event()
        cancellations = 0

        async def long_answer(turn: Turn) -> None:
            nonlocal cancellations
            if turn.payload["n"] == 0:
                started.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    cancellations += 1
                    cancelled.set()
                    await turn.record(stopped=True)  # settling still works

        answers = Answers(2, long_answer)
        first = await queue.enqueue("t1", {"n": 0}, owner="slack:T1:U1")
        await queue.enqueue("t1", {"n": 1}, owner="slack:T1:U1")
        assert first is not None
        async with working(queue, answers):
            await asyncio.wait_for(started.wait(), DEADLINE)
            async with asyncio.timeout(DEADLINE):
                while not cancelled.is_set():  # the stop channel may still be subscribing
                    await other_queue.request_stop(first, by="slack:T1:U2")
                    await other_queue.request_stop(first, by="slack:T1:U1")
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(cancelled.wait(), 0.2)
            await answers.wait()
            await drained(queue)
        assert cancellations == 1
        assert [(t.payload["n"], t.attempt) for t in answers.turns] == [(0, 1), (1, 1)]
