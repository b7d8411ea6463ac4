"""On Redis a turn recorded in a process whose worker has a free slot is handed to that
worker by the enqueue itself (no fetch, no ``begin``): the turn runs there even while other
processes' workers wait, and every guarantee of the queue holds - per-thread order, the
worker's concurrency and the asker's cap, drains, crashes and outages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from agent_core.errors import StateUnavailableError
from agent_core.state import DrainingTurnQueue
from agent_core.state.redis_client import connect_redis
from agent_core.state.testing import RedisServer
from agent_core.state.turn_backend import Delivery, Readiness, Start
from agent_core.state.turns import Turn
from agent_core.state.turns_redis import RedisTurnQueue
from tests.state.turn_contract import (
    DEADLINE,
    Answers,
    drained,
    killed_mid_turn,
    survivor_reruns,
    working,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

pytestmark = pytest.mark.redis

CLAIM_AFTER = 0.5


@pytest.fixture
def here(redis: Redis, key_prefix: str) -> RedisTurnQueue:
    """The queue as the process recording the turns sees it."""
    return RedisTurnQueue(redis, key_prefix=key_prefix, claim_after=CLAIM_AFTER)


@pytest.fixture
async def there(redis_url: str, key_prefix: str) -> AsyncIterator[RedisTurnQueue]:
    """The same queue as another process sees it (a connection pool of its own)."""
    client = connect_redis(redis_url)
    yield RedisTurnQueue(client, key_prefix=key_prefix, claim_after=CLAIM_AFTER)
    await client.aclose()


async def until(condition: asyncio.Event) -> None:
    await asyncio.wait_for(condition.wait(), DEADLINE)


async def ready(queue: RedisTurnQueue) -> None:
    """Until the workers' consumer group exists (their first fetch creates it)."""
    async with asyncio.timeout(DEADLINE):
        while not await queue._redis.exists(queue.stream_key):
            await asyncio.sleep(0.005)  # polling the workers' start, with a deadline


async def test_a_turn_runs_on_the_worker_of_the_process_that_recorded_it(
    here: RedisTurnQueue, there: RedisTurnQueue
) -> None:
    """Both processes' workers wait for turns; every turn recorded here runs here."""
    mine, theirs = Answers(10), Answers(1)
    async with working(there, theirs, consumer="there"), working(here, mine, consumer="here"):
        await ready(here)
        for n in range(10):
            await here.enqueue(f"thread-{n}", {"n": n}, owner="T1:U1")
            await asyncio.wait_for(_answered(mine, n + 1), DEADLINE)
        await drained(here)
    assert [t.payload["n"] for t in mine.turns] == list(range(10))
    assert {(t.attempt, t.is_retry) for t in mine.turns} == {(1, False)}
    assert theirs.turns == []


async def _answered(answers: Answers, count: int) -> None:
    while len(answers.turns) < count:
        await asyncio.sleep(0.005)  # polling the handler's record, with a deadline (caller)


async def test_turns_handed_over_behind_an_unfinished_one_keep_the_thread_order(
    here: RedisTurnQueue, there: RedisTurnQueue
) -> None:
    """The first turn of a thread is still running when the next ones are recorded: they
    are handed over too, and wait for it; the thread's turns run one at a time, in order."""
    release = asyncio.Event()

    async def first_is_slow(turn: Turn) -> None:
        if turn.payload["n"] == 0:
            await release.wait()

    answers = Answers(4, first_is_slow)
    async with working(here, answers, consumer="here"), working(there, answers, consumer="x"):
        await ready(here)
        for n in range(4):
            await here.enqueue("thread", {"n": n})
        await asyncio.sleep(0.05)  # give a wrong order the chance to happen
        assert answers.turns == []
        release.set()
        await answers.wait()
        await drained(here)
    assert answers.by_thread["thread"] == [0, 1, 2, 3] and answers.overlaps == 0


async def test_hand_overs_and_fetches_together_stay_within_the_concurrency(
    here: RedisTurnQueue, there: RedisTurnQueue
) -> None:
    """Turns recorded here (handed over) and elsewhere (fetched) at once: the worker never
    runs more than ``concurrency`` of them together."""
    running, most = 0, 0
    go = asyncio.Event()

    async def busy(turn: Turn) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await go.wait()
            await asyncio.sleep(0.01)  # hold the slot a moment: the others pile up
        finally:
            running -= 1

    answers = Answers(24, busy)
    async with working(here, answers, concurrency=3, consumer="here"):
        await ready(here)
        for n in range(3):  # while the worker's fetch waits: as many hand-overs as it allows
            await here.enqueue(f"mine-{n}", {"n": n})
        for n in range(3):  # then turns for that fetch
            await there.enqueue(f"theirs-{n}", {"n": n})
        await asyncio.gather(
            *(here.enqueue(f"mine-{n}", {"n": n}) for n in range(3, 12)),
            *(there.enqueue(f"theirs-{n}", {"n": n}) for n in range(3, 12)),
        )
        go.set()
        await answers.wait()
        await drained(here)
    assert most == 3


async def test_an_asker_at_their_cap_is_not_handed_over(here: RedisTurnQueue) -> None:
    """``per_owner`` holds for hand-overs: the asker's second turn waits for their first,
    while someone else's turn recorded after it runs at once."""
    release, others_ran = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def handler(turn: Turn) -> None:
        order.append(turn.payload["who"])
        if turn.payload["who"] == "ana-1":
            await release.wait()
        if turn.payload["who"] == "bo":
            others_ran.set()

    answers = Answers(3, handler)
    async with working(here, answers, per_owner=1, consumer="here"):
        await ready(here)
        await here.enqueue("t1", {"who": "ana-1"}, owner="T1:ANA")
        await here.enqueue("t2", {"who": "ana-2"}, owner="T1:ANA")
        await here.enqueue("t3", {"who": "bo"}, owner="T1:BO")
        await until(others_ran)
        assert order == ["ana-1", "bo"]
        release.set()
        await answers.wait()
        await drained(here)
    assert order == ["ana-1", "bo", "ana-2"]


async def test_a_draining_worker_takes_no_turn_recorded_in_its_process(
    here: RedisTurnQueue, there: RedisTurnQueue
) -> None:
    """SIGTERM: the draining process still records turns (it acks them), but its worker
    takes none of them: another process's worker answers."""
    draining = DrainingTurnQueue(here)
    assert await draining.drain(timeout=1)  # nothing held: its worker fetches nothing more
    mine, theirs = Answers(1), Answers(1)
    async with working(there, theirs, consumer="x"), working(draining, mine, consumer="leaving"):
        await ready(here)
        await here.enqueue("t1", {"n": 1})
        await theirs.wait()
        await drained(here)
    assert mine.turns == [] and [t.payload for t in theirs.turns] == [{"n": 1}]


async def test_a_handed_over_turn_of_a_killed_process_finishes_on_another(
    here: RedisTurnQueue, redis_url: str, key_prefix: str
) -> None:
    """``kill -9`` of the process that recorded a turn and was running it: another worker
    claims it after ``claim_after`` with what it recorded; the thread's next turn follows."""
    killed = await killed_mid_turn(
        "tests.state.handover_process",
        redis_url,
        key_prefix,
        str(CLAIM_AFTER),
        "slack:T1:C1:1.0",
    )
    await survivor_reruns(here, killed)


async def test_an_enqueue_that_fails_gives_its_slot_back(private_redis: RedisServer) -> None:
    """Regression guard: a slot held for a hand-over whose enqueue failed (Redis down) is
    given back; otherwise a worker of one slot would never run a turn again."""
    client = connect_redis(private_redis.url, timeout=0.5)
    queue = RedisTurnQueue(client, claim_after=CLAIM_AFTER)
    answers = Answers(1)
    try:
        async with working(queue, answers, concurrency=1, consumer="one"):
            await ready(queue)
            private_redis.stop()
            for n in range(3):
                with pytest.raises(StateUnavailableError):
                    await queue.enqueue(f"t{n}", {"n": n})
            private_redis.start()
            await asyncio.wait_for(_enqueued(queue), DEADLINE)
            await answers.wait()
    finally:
        await client.aclose()
    assert [t.payload for t in answers.turns] == [{"n": "after"}]


async def _enqueued(queue: RedisTurnQueue) -> None:
    while True:  # Redis restarted empty: the worker recreates its group as it fetches again
        if await queue._redis.exists(queue.stream_key):
            await queue.enqueue("t", {"n": "after"})
            return
        await asyncio.sleep(0.01)  # polling the worker's recovery, with a deadline (caller)


async def test_a_turn_waiting_in_another_process_is_started_by_the_completion_before_it(
    here: RedisTurnQueue, there: RedisTurnQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's next question is recorded (and handed over) in the other process while its
    first turn runs here: the first turn's completion starts it there, and says so, so the
    waiting worker never asks ``begin`` (issue 37: a round trip per turn under a burst)."""
    release = asyncio.Event()
    asked: list[str] = []
    begin = there.begin

    async def counted(delivery: Delivery, consumer: str) -> Start:
        asked.append(delivery.id)
        return await begin(delivery, consumer)

    monkeypatch.setattr(there, "begin", counted)

    async def first_is_slow(turn: Turn) -> None:
        if turn.payload["n"] == 0:
            await release.wait()

    answers = Answers(2, first_is_slow)
    async with working(here, answers, consumer="here"), working(there, answers, consumer="x"):
        await ready(here)
        await here.enqueue("thread", {"n": 0})
        await there.enqueue("thread", {"n": 1})
        await asyncio.sleep(0.05)  # the second turn waits, handed over, in the other process
        release.set()
        await answers.wait()
        await drained(here)
    assert answers.by_thread["thread"] == [0, 1]
    assert [turn.attempt for turn in answers.turns] == [1, 1] and asked == []


async def test_a_missed_announcement_is_the_same_start(here: RedisTurnQueue) -> None:
    """The worker holding the thread's next turn missed the announcement of its start:
    ``begin`` gives it that start (the same attempt, not a second one); any other worker,
    once it claims the turn, starts a new attempt."""
    first = await here.enqueue("thread", {"n": 0})
    second = await here.enqueue("thread", {"n": 1})
    deliveries = await here.fetch("c1", 2, 0.1)
    assert [d.id for d in deliveries] == [first, second]
    assert (await here.begin(deliveries[0], "c1")).attempt == 1
    assert await here.complete(deliveries[0], "c1")
    again = await here.begin(deliveries[1], "c1")
    assert (again.readiness, again.attempt) == (Readiness.RUN, 1)
    claimed = await here.claim("c2", 1) or await _claimed(here)
    assert (await here.begin(claimed[0], "c2")).attempt == 2


async def _claimed(queue: RedisTurnQueue) -> list[Delivery]:
    await asyncio.sleep(CLAIM_AFTER)  # the lease of c1 runs out (no worker renews it)
    return await queue.claim("c2", 1)
