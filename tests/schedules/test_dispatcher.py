"""The dispatcher: each occurrence one turn, on any number of processes, whatever their clocks."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import TYPE_CHECKING

from agent_core.schedules.dispatcher import DispatchReport, ScheduleDispatcher
from agent_core.schedules.model import Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.store import ScheduleLimits, ScheduleStore
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.store_redis import RedisScheduleStore
from agent_core.schedules.testing import ManualClock
from agent_core.state import MemoryTurnQueue, RedisTurnQueue, TurnQueue
from agent_core.state.redis_client import connect_redis
from tests.schedules.builders import schedule

if TYPE_CHECKING:
    from redis.asyncio import Redis

ROOMY = ScheduleLimits(per_person=10_000, per_workspace=10_000)
PARIS_MONDAY_9 = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)  # 9:00 in Paris (CET)
HOURLY = Recurrence(frequency="hours", every=1)
QUARTER = Recurrence(frequency="minutes", every=15)


async def made(
    store: ScheduleStore, recurrence: Recurrence, due: dt.datetime, **kw: object
) -> Schedule:
    made = schedule(recurrence=recurrence, next_due=due.timestamp(), **kw)  # type: ignore[arg-type]
    await store.add(made, limits=ROOMY)
    return made


async def runs(queue: TurnQueue) -> list[Occurrence]:
    found = await queue.fetch("test", 100_000, 0.01)
    return [o for d in found if (o := Occurrence.from_payload(d.payload)) is not None]


async def test_an_occurrence_runs_at_its_time_once() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9 - dt.timedelta(minutes=1))
    dispatcher = ScheduleDispatcher(store, queue, clock=clock)
    weekly = await made(store, schedule().recurrence, PARIS_MONDAY_9)
    assert (await dispatcher.tick()).total == 0
    clock.advance(60)
    assert (await dispatcher.tick()).enqueued == 1
    assert (await dispatcher.tick()).total == 0
    (run,) = await runs(queue)
    assert (run.schedule_id, run.at, run.missed) == (weekly.id, PARIS_MONDAY_9.timestamp(), 0)
    moved = await store.get(weekly.id)
    assert moved is not None and moved.due_at == PARIS_MONDAY_9 + dt.timedelta(days=1)


async def test_after_downtime_a_missed_run_happens_once_late() -> None:
    """A two-hour outage: one run, for the latest occurrence, saying two were missed."""
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    ten = dt.datetime(2025, 1, 6, 10, tzinfo=dt.UTC)
    clock = ManualClock.at(ten + dt.timedelta(hours=2, minutes=10))
    dispatcher = ScheduleDispatcher(store, queue, clock=clock)
    hourly = await made(store, HOURLY, ten)
    assert (await dispatcher.tick()).enqueued == 1
    assert (await dispatcher.tick()).total == 0
    (run,) = await runs(queue)
    assert run.at == (ten + dt.timedelta(hours=2)).timestamp() and run.missed == 2
    assert run.dispatched_at - run.at == 600  # "ran 10 min late"
    moved = await store.get(hourly.id)
    assert moved is not None and moved.due_at == ten + dt.timedelta(hours=3)


async def test_a_process_that_died_between_claim_steps_loses_nothing() -> None:
    """The run was enqueued, then the process died before moving the schedule on: the next
    process's enqueue is a duplicate and its advance succeeds."""
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9)
    hourly = await made(store, HOURLY, PARIS_MONDAY_9)
    dead = ScheduleDispatcher(store, queue, clock=clock)
    occurrence, _ = dead._plan(hourly, clock.now())
    assert await dead._enqueue(hourly, occurrence) is not None
    report = await ScheduleDispatcher(store, queue, clock=clock).tick()
    assert (report.enqueued, report.duplicate) == (0, 1)
    assert len(await runs(queue)) == 1
    moved = await store.get(hourly.id)
    assert moved is not None and moved.due_at == PARIS_MONDAY_9 + dt.timedelta(hours=1)


async def test_a_process_that_died_holding_a_lease_is_taken_over_late_once() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9)
    hourly = await made(store, HOURLY, PARIS_MONDAY_9)
    assert [s.id for s in await store.due(clock.now(), limit=10, lease=30)] == [hourly.id]
    survivor = ScheduleDispatcher(store, queue, clock=clock, lease=30)  # the leaser died
    assert (await survivor.tick()).total == 0
    clock.advance(31)
    assert (await survivor.tick()).enqueued == 1
    (run,) = await runs(queue)
    assert run.at == PARIS_MONDAY_9.timestamp() and run.dispatched_at - run.at == 31


async def test_a_paused_workspace_skips_its_runs() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9)
    here = await made(store, HOURLY, PARIS_MONDAY_9)
    there = await made(store, HOURLY, PARIS_MONDAY_9, workspace="slack:T2")
    await store.pause_workspace("slack:T1", True)
    report = await ScheduleDispatcher(store, queue, clock=clock).tick()
    assert (report.enqueued, report.skipped) == (1, 1)
    assert [r.schedule_id for r in await runs(queue)] == [there.id]
    skipped = await store.get(here.id)
    assert skipped is not None and skipped.due_at > PARIS_MONDAY_9
    assert skipped.last_run is not None and "paused" in skipped.last_run.outcome


async def test_fire_now_runs_the_next_occurrence_instead_of_at_its_time() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9 - dt.timedelta(hours=5))
    dispatcher = ScheduleDispatcher(store, queue, clock=clock)
    weekly = await made(store, schedule().recurrence, PARIS_MONDAY_9)
    assert await dispatcher.fire_now(weekly.id) is not None
    (run,) = await runs(queue)
    assert run.fired and run.due == PARIS_MONDAY_9.timestamp()
    clock.set(PARIS_MONDAY_9.timestamp())
    assert (await dispatcher.tick()).total == 0  # its time came: it already ran
    assert await dispatcher.fire_now("00000000") is None


async def test_many_due_at_once_in_batches() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9)
    for _ in range(120):
        await made(store, QUARTER, PARIS_MONDAY_9)
    report = await ScheduleDispatcher(store, queue, clock=clock, batch=7).tick()
    assert report.enqueued == 120
    assert len(await runs(queue)) == 120


async def test_the_loop_sleeps_on_the_clock_until_the_next_run() -> None:
    store, queue = MemoryScheduleStore(), MemoryTurnQueue()
    clock = ManualClock.at(PARIS_MONDAY_9 - dt.timedelta(minutes=30))
    ticks: asyncio.Queue[DispatchReport] = asyncio.Queue()
    dispatcher = ScheduleDispatcher(store, queue, clock=clock, poll=3600, on_tick=ticks.put_nowait)
    await made(store, QUARTER, PARIS_MONDAY_9)
    loop = asyncio.create_task(dispatcher.run())
    try:
        assert (await ticks.get()).total == 0  # it is 8:30: nothing due, sleep until 9:00
        await clock.sleeping()
        clock.advance(29 * 60)
        assert ticks.empty()
        clock.advance(60)
        assert (await ticks.get()).enqueued == 1
        await clock.sleeping()
        await made(store, QUARTER, PARIS_MONDAY_9 + dt.timedelta(minutes=1))
        dispatcher.wake()  # made here: looked at at once, not at the next quarter
        assert (await ticks.get()).total == 0
        await clock.sleeping()
        clock.advance(60)
        assert (await ticks.get()).enqueued == 1
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    assert len(await runs(queue)) == 2


async def test_two_processes_with_clocks_5s_apart_run_each_occurrence_once(
    redis_url: str, key_prefix: str
) -> None:
    """Two processes (their own Redis clients), one clock 5 s ahead of the other, both
    ticking every second across four quarter-hour boundaries: 40 schedules x 4 runs, each
    once."""
    clients = [connect_redis(redis_url), connect_redis(redis_url)]
    stores = [RedisScheduleStore(c, key_prefix=key_prefix) for c in clients]
    queues = [RedisTurnQueue(c, key_prefix=key_prefix) for c in clients]
    start = PARIS_MONDAY_9 - dt.timedelta(seconds=20)
    clock = ManualClock.at(start)
    clocks = [clock.skewed(5), clock]
    for _ in range(40):
        await made(stores[0], QUARTER, PARIS_MONDAY_9)
    dispatchers = [
        ScheduleDispatcher(s, q, clock=c) for s, q, c in zip(stores, queues, clocks, strict=True)
    ]
    totals = DispatchReport()
    for boundary in range(4):
        clock.set((PARIS_MONDAY_9 + dt.timedelta(minutes=15 * boundary, seconds=-10)).timestamp())
        for _ in range(20):
            for report in await asyncio.gather(*(d.tick() for d in dispatchers)):
                for outcome in ("enqueued", "duplicate", "skipped", "lost"):
                    setattr(totals, outcome, getattr(totals, outcome) + getattr(report, outcome))
            clock.advance(1)
    found = await runs(queues[0])
    keys = [r.key for r in found]
    assert len(found) == 160 and len(set(keys)) == 160
    assert totals.enqueued == 160
    for client in clients:
        await client.aclose()


async def test_redis_claims_race_from_many_tasks(redis: Redis, key_prefix: str) -> None:
    store, queue = (
        RedisScheduleStore(redis, key_prefix=key_prefix),
        RedisTurnQueue(redis, key_prefix=key_prefix),
    )
    clock = ManualClock.at(PARIS_MONDAY_9)
    for _ in range(30):
        await made(store, QUARTER, PARIS_MONDAY_9)
    dispatchers = [ScheduleDispatcher(store, queue, clock=clock) for _ in range(6)]
    reports = await asyncio.gather(*(d.tick() for d in dispatchers))
    assert sum(r.enqueued for r in reports) == 30
    assert len(await runs(queue)) == 30
