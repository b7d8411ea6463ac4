"""Scheduled questions on Redis: 10,000 schedules due in the same minute, dispatched by 2
processes. Time to dispatch them all, duplicates (goal 0), missed (goal 0), the dispatch
overhead per run, and what Redis runs per run.

Each round seeds ``--schedules`` schedules (every 15 minutes, all due at the same instant,
on separate threads) in a fresh key prefix, then starts the dispatcher processes (each
``ScheduleDispatcher.run`` on its own Redis client, ``agent_core.schedules``) with clocks
that reach that instant a few seconds later, once they are ready; the clock is the time
from the due instant until the last run is on the turn queue. Then every turn on the queue
is read back: ``duplicates`` = turns beyond one per (schedule, occurrence), ``missed`` =
schedules with no turn, or not moved on to their next run.

Rounds, each in the same run:

- anchor: ``bare enqueue`` - this process enqueues the same number of turns (one
  ``RedisTurnQueue.enqueue`` each, 32 at a time): the floor of turning N things into turns;
- ``2 processes`` dispatching (``--one-process``: 1 process too);
- ``2 processes, clocks 5 s apart`` (one process's clock runs 5 s ahead, so it starts
  alone, 5 s early): only duplicates and missed are the point here.

Overhead per run = (dispatch time - bare enqueue time) / runs, per process (2 processes
share the work). Per run, from ``INFO commandstats`` deltas over the dispatch: the Lua
scripts run (enqueue and claim are one each) and every command Redis ran, those inside
scripts included (the driver's polling and the dispatchers' idle looks too).

    .venv/bin/python benchmarks/schedules.py [--schedules 10000] [--rounds 1] [--one-process]

Without ``--redis-url`` a private ``redis-server`` (loopback, persistence off) is started.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _stats import result_line  # noqa: E402
from _subprocesses import ReadyProcesses  # noqa: E402

from agent_core.clock import SystemClock  # noqa: E402
from agent_core.schedules.dispatcher import DispatchReport, ScheduleDispatcher  # noqa: E402
from agent_core.schedules.model import Place, Schedule  # noqa: E402
from agent_core.schedules.occurrence import Occurrence  # noqa: E402
from agent_core.schedules.recurrence import Recurrence  # noqa: E402
from agent_core.schedules.store import ScheduleLimits  # noqa: E402
from agent_core.schedules.store_redis import RedisScheduleStore  # noqa: E402
from agent_core.state import connect_redis  # noqa: E402
from agent_core.state.testing import RedisServer  # noqa: E402
from agent_core.state.turns_redis import RedisTurnQueue  # noqa: E402

if TYPE_CHECKING:
    from redis.asyncio import Redis

QUARTER = Recurrence(frequency="minutes", every=15)
START = 3.0
"""Seconds after its processes start that a round's schedules come due (they are ready)."""
LABELS = {"two": "2 processes", "skewed": "2 processes, 5 s apart", "one": "1 process"}
SKEWS = {"two": [0.0, 0.0], "skewed": [5.0, 0.0], "one": [0.0]}


class OffsetClock(SystemClock):
    """The machine's clock, ``offset`` seconds off (a round's instant; another host's skew)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def now(self) -> float:
        return super().now() + self.offset


# -- a dispatcher process ------------------------------------------------------------------


async def dispatcher_process(url: str, prefix: str, offset: float) -> None:
    client = connect_redis(url)

    def report(tick: DispatchReport) -> None:
        if tick.total:
            print(json.dumps(vars(tick)), flush=True)

    dispatcher = ScheduleDispatcher(
        RedisScheduleStore(client, key_prefix=prefix),
        RedisTurnQueue(client, key_prefix=prefix),
        clock=OffsetClock(offset),
        poll=0.05,
        on_tick=report,
    )
    print("ready", flush=True)
    await dispatcher.run()


class Dispatchers(ReadyProcesses):
    """Dispatcher subprocesses; their tick reports arrive on stdout."""

    def __init__(self) -> None:
        super().__init__(__file__, ROOT, lambda line: self.reports.append(json.loads(line)))
        self.reports: list[dict[str, int]] = []

    async def start_at(self, url: str, prefix: str, offsets: list[float]) -> None:
        await self.start([["--dispatcher", url, prefix, repr(offset)] for offset in offsets])


# -- the driver ------------------------------------------------------------------------------


async def seed(store: RedisScheduleStore, count: int, due: float) -> list[Schedule]:
    limits = ScheduleLimits(per_person=count, per_workspace=count)
    made = [
        Schedule(
            id=f"{i:08x}",  # distinct (random 32-bit ids may meet among 10,000)
            workspace="slack:T1",
            owner=f"slack:T1:U{i % 500}",
            place=Place(thread_key=f"slack:T1:C{i}:1.0", stop_owner=f"T1:U{i % 500}"),
            recurrence=QUARTER,
            question="orders today",
            created_at=due - 3600,
            next_due=due,
        )
        for i in range(count)
    ]
    gate = asyncio.Semaphore(64)

    async def add(schedule: Schedule) -> None:
        async with gate:
            await store.add(schedule, limits=limits)

    await asyncio.gather(*(add(s) for s in made))
    return made


async def until_enqueued(queue: RedisTurnQueue, count: int, timeout: float) -> float:
    """Polls the stream's length (the benchmark's own clock) until ``count`` turns are on it;
    the ``perf_counter`` time it got there."""
    deadline = time.perf_counter() + timeout
    while await queue.pending() < count and time.perf_counter() < deadline:
        await asyncio.sleep(0.005)
    return time.perf_counter()


async def audit(
    client: Redis, store: RedisScheduleStore, stream: str, made: list[Schedule], due: float
) -> tuple[int, int]:
    """``(duplicates, missed)`` from the turns on the queue and the schedules' next runs."""
    entries = await client.xrange(stream)
    keys = [
        occurrence.key
        for _, fields in entries
        if (occurrence := Occurrence.from_payload(json.loads(fields["payload"]))) is not None
    ]
    expected = {Occurrence(schedule_id=s.id, due=due, at=due, dispatched_at=0).key for s in made}
    moved = {s.id: s for s in await store.every(limit=len(made) + 1)}
    missed = len(expected - set(keys))
    missed += sum(s.id not in moved or moved[s.id].next_due <= due for s in made)
    return len(keys) - len(set(keys)), missed


async def command_counts(url: str) -> tuple[int, int]:
    """Commands Redis processed so far (those inside scripts too), and scripts run."""
    client = connect_redis(url)
    stats = await client.info("commandstats")
    await client.aclose()
    calls = {name: int(found["calls"]) for name, found in stats.items()}
    return sum(calls.values()), calls.get("cmdstat_evalsha", 0) + calls.get("cmdstat_eval", 0)


async def dispatch_round(url: str, count: int, skews: list[float]) -> dict[str, Any]:
    """Seed ``count`` schedules due at one instant, then start the dispatchers with clocks
    set so that instant comes ``START`` seconds later (plus each one's skew): the time to
    dispatch is measured from then, with nothing else running."""
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    client = connect_redis(url)
    store = RedisScheduleStore(client, key_prefix=prefix)
    queue = RedisTurnQueue(client, key_prefix=prefix)
    due = float(round(time.time() + 3600))
    made = await seed(store, count, due)
    dispatchers = Dispatchers()
    start_at = time.time() + START
    try:
        await dispatchers.start_at(url, prefix, [due - start_at + skew for skew in skews])
        commands_before, scripts_before = await command_counts(url)
        wait = start_at - time.time()
        await asyncio.sleep(max(0.0, wait))  # the benchmark's clock: until the due instant
        started = time.perf_counter()
        finished = await until_enqueued(queue, count, timeout=120)
        elapsed = finished - started + min(0.0, wait)
        await asyncio.sleep(0.3)  # late duplicates, if any, would land now
        commands_after, scripts_after = await command_counts(url)
        duplicates, missed = await audit(client, store, queue.stream_key, made, due)
    finally:
        await dispatchers.stop()
        await client.aclose()
    return {
        "seconds": elapsed,
        "duplicates": duplicates,
        "missed": missed,
        "commands_per_run": (commands_after - commands_before) / count,
        "scripts_per_run": (scripts_after - scripts_before) / count,
    }


async def bare_round(url: str, count: int) -> float:
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    client = connect_redis(url)
    queue = RedisTurnQueue(client, key_prefix=prefix)
    gate = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with gate:
            payload = {"kind": "scheduled", "schedule_id": f"{i:08x}", "due": 0.0, "at": 0.0}
            await queue.enqueue(f"slack:T1:C{i}:1.0", payload, dedupe_key=f"b{i}")

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - started
    await client.aclose()
    return elapsed


async def main(args: argparse.Namespace) -> None:
    server = None
    url = args.redis_url
    if url is None:
        server = RedisServer(Path(tempfile.mkdtemp()) / "redis")
        server.start()
        url = server.url
    n = args.schedules
    names = ["two", "skewed", *(["one"] if args.one_process else [])]
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    bare: list[float] = []
    try:
        for _ in range(args.rounds):
            bare.append(await bare_round(url, n))
            for name in names:
                rounds[name].append(await dispatch_round(url, n, SKEWS[name]))
    finally:
        if server is not None:
            server.stop()
    report(n, bare, rounds)


def report(n: int, bare: list[float], rounds: dict[str, list[dict[str, Any]]]) -> None:
    bare_s = statistics.median(bare)
    figures: dict[str, Any] = {"schedules": n, "bare_enqueue_s": round(bare_s, 3)}
    print(f"anchor: bare enqueue of {n:,} turns: {bare_s:.3f} s ({bare_s / n * 1e6:.1f} µs/turn)")
    for name, found in rounds.items():
        processes = len(SKEWS[name])
        seconds = statistics.median(r["seconds"] for r in found)
        duplicates = sum(r["duplicates"] for r in found)
        missed = sum(r["missed"] for r in found)
        commands = statistics.median(r["commands_per_run"] for r in found)
        scripts = statistics.median(r["scripts_per_run"] for r in found)
        overhead = (seconds - bare_s) / n * processes * 1e6
        print(
            f"{LABELS[name]}: {n:,} runs dispatched in {seconds:.3f} s "
            f"({seconds / bare_s:.2f}x the anchor), duplicates {duplicates}, missed {missed}, "
            f"{scripts:.2f} scripts and {commands:.1f} Redis commands (in scripts too) per run, "
            f"overhead {overhead:.1f} µs per run per process"
        )
        figures[name] = {
            "seconds": round(seconds, 3),
            "ratio": round(seconds / bare_s, 3),
            "duplicates": duplicates,
            "missed": missed,
            "scripts_per_run": round(scripts, 2),
            "redis_commands_per_run": round(commands, 1),
            "overhead_us_per_run": round(overhead, 1),
        }
    print(result_line("schedules", **figures))


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument(
        "--one-process", action="store_true", help="also dispatch them from one process"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--dispatcher":
        asyncio.run(dispatcher_process(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    else:
        asyncio.run(main(parse(sys.argv[1:])))
