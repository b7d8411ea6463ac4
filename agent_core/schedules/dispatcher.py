"""``ScheduleDispatcher``: turns due occurrences into turns, once each, on any number of
processes.

For each schedule whose ``next_due`` has come (by this process's clock), one step claims
the occurrence and another moves the schedule on::

    enqueue(thread, Occurrence, dedupe_key="schedule:<id>:<next_due>")   the run, once
    advance(id, expected=next_due, next_due=<first run after now>)      compare and set

The claim is keyed by the occurrence the store holds, never by a comparison of clocks: a
process whose clock is 5 s ahead may dispatch a run 5 s early, but a second process that
read the same occurrence meets the dedupe key and a failed compare-and-set, so it runs
once. Enqueueing first means a process that dies between the two steps loses nothing (the
next one's enqueue is dropped as a duplicate and its advance succeeds).

After downtime a schedule's ``next_due`` lies in the past: one run stands for every
occurrence missed (``Occurrence.missed``), for the latest of them, and the schedule moves
to its first run after now, so it never runs N times to catch up. A workspace an admin
paused has its occurrences skipped (moved on without a run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from agent_core.clock import SYSTEM_CLOCK, Clock, instant
from agent_core.errors import StateUnavailableError
from agent_core.schedules.model import LastRun, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.store import ScheduleStore
from agent_core.state.turns import TurnQueue

log = logging.getLogger("threadline.schedules")

DEDUPE_TTL = 8 * 86400.0
"""How long an occurrence's claim is remembered (far longer than any read is stale)."""
OUTAGE_FIRST, OUTAGE_MAX = 0.5, 30.0

Outcome = Literal["enqueued", "duplicate", "skipped", "lost"]


@dataclass
class DispatchReport:
    """What one ``tick`` did: runs enqueued here, occurrences another process had already
    enqueued (``duplicate``), skipped (workspace paused), or claimed by another process
    between the read and the claim (``lost``).

    >>> DispatchReport(enqueued=2).total
    2
    """

    enqueued: int = 0
    duplicate: int = 0
    skipped: int = 0
    lost: int = 0
    at: float = 0.0
    """The time the tick looked at (its clock's)."""

    @property
    def total(self) -> int:
        return self.enqueued + self.duplicate + self.skipped + self.lost

    def count(self, outcome: Outcome) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


class ScheduleDispatcher:
    """Dispatches due occurrences to ``turns`` (see the module docstring).

    ``tick`` is one pass (tests call it after moving their clock); ``run`` ticks forever,
    sleeping on ``clock`` until the earliest next run (at most ``poll`` seconds, and woken
    by ``wake`` when a schedule is made in this process), calling ``on_tick`` after each.

    >>> from agent_core.schedules.store_memory import MemoryScheduleStore
    >>> from agent_core.state import MemoryTurnQueue
    >>> import asyncio
    >>> dispatcher = ScheduleDispatcher(MemoryScheduleStore(), MemoryTurnQueue())
    >>> asyncio.run(dispatcher.tick()).total
    0
    """

    def __init__(
        self,
        store: ScheduleStore,
        turns: TurnQueue,
        *,
        clock: Clock | None = None,
        batch: int = 500,
        concurrency: int = 32,
        poll: float = 30.0,
        lease: float = 30.0,
        on_tick: Callable[[DispatchReport], None] | None = None,
    ) -> None:
        if batch < 1 or concurrency < 1 or poll <= 0:
            raise ValueError("batch, concurrency and poll must be positive")
        self.store = store
        self.turns = turns
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.batch = batch
        self.concurrency = concurrency
        self.poll = poll
        self.lease = lease
        """Seconds a process holds the due schedules it read (others pass them over); one
        whose process died meanwhile runs that much late, once."""
        self.on_tick = on_tick
        """Called after each tick of ``run`` with its report (metrics; tests wait on it)."""
        self._wake = asyncio.Event()

    # --- one pass ---------------------------------------------------------------------------

    async def tick(self) -> DispatchReport:
        """Dispatch every occurrence due now (by this process's clock)."""
        now = self.clock.now()
        paused = await self.store.paused_workspaces()
        report = DispatchReport(at=now)
        seen: set[str] = set()
        while True:
            taken = await self.store.due(now, limit=self.batch, lease=self.lease)
            due = [s for s in taken if s.id not in seen]
            if not due:
                return report
            seen.update(s.id for s in due)
            random.shuffle(due)  # two processes reading one batch (no lease) take different ones
            await self._each(due, lambda s: self._dispatch(s, now, paused, report))

    async def _each(
        self, schedules: list[Schedule], work: Callable[[Schedule], Awaitable[None]]
    ) -> None:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(schedule: Schedule) -> None:
            async with gate:
                await work(schedule)

        await asyncio.gather(*(one(s) for s in schedules))

    async def _dispatch(
        self, schedule: Schedule, now: float, paused: frozenset[str], report: DispatchReport
    ) -> None:
        try:
            occurrence, following = self._plan(schedule, now)
        except (ValueError, StopIteration):  # a recurrence that cannot go on: stop it
            log.exception("schedule %s cannot compute its next run; pausing it", schedule.id)
            await self.store.pause(schedule.id, "its next run could not be computed")
            return
        if schedule.workspace in paused:
            skipped = LastRun(at=now, outcome="skipped: an admin paused every schedule")
            claimed = await self.store.advance(
                schedule.id, expected=schedule.next_due, next_due=following, last_run=skipped
            )
            report.count("skipped" if claimed else "lost")
            return
        turn = await self._enqueue(schedule, occurrence)
        claimed = await self.store.advance(
            schedule.id, expected=schedule.next_due, next_due=following, last_run=None
        )
        if turn is not None:
            report.count("enqueued")
            log.info("schedule %s: occurrence %s is turn %s", schedule.id, occurrence.at, turn)
        else:
            report.count("duplicate" if claimed else "lost")

    def _plan(self, schedule: Schedule, now: float) -> tuple[Occurrence, float]:
        """The run for ``schedule``'s due occurrence (the latest missed one after downtime)
        and its next run after that."""
        late = schedule.recurrence.catch_up(schedule.due_at, instant(now))
        occurrence = Occurrence(
            schedule_id=schedule.id,
            due=schedule.next_due,
            at=late.latest.timestamp(),
            dispatched_at=now,
            missed=late.missed,
        )
        return occurrence, late.following.timestamp()

    async def _enqueue(self, schedule: Schedule, occurrence: Occurrence) -> str | None:
        return await self.turns.enqueue(
            schedule.place.thread_key,
            occurrence.payload(),
            dedupe_key=occurrence.key,
            dedupe_ttl=DEDUPE_TTL,
            owner=schedule.place.stop_owner,
        )

    # --- by hand ----------------------------------------------------------------------------

    async def fire_now(self, schedule_id: str) -> str | None:
        """Run a schedule's next occurrence now (the console's button): the occurrence is
        claimed as the dispatcher would, so it does not run again at its time. The turn id,
        or None for an unknown, paused or already claimed one."""
        schedule = await self.store.get(schedule_id)
        if schedule is None or schedule.status != "active":
            return None
        now = self.clock.now()
        occurrence = Occurrence(
            schedule_id=schedule.id,
            due=schedule.next_due,
            at=now,
            dispatched_at=now,
            fired=True,
        )
        turn = await self._enqueue(schedule, occurrence)
        following = schedule.recurrence.next_after(max(schedule.due_at, instant(now)))
        await self.store.advance(
            schedule.id,
            expected=schedule.next_due,
            next_due=following.timestamp(),
            last_run=None,
        )
        return turn

    async def run_once(self, schedule: Schedule, claim: str | None = None) -> str | None:
        """Run ``schedule`` once now, besides its times ("Run now"): an occurrence of its
        own on the schedule's thread, the durable path every run takes, while its next run
        stays as it was. ``claim`` (the id of the turn that asked) makes a re-run of that
        turn find this run enqueued already. The turn id, or None when it was."""
        now = self.clock.now()
        occurrence = Occurrence(
            schedule_id=schedule.id, due=now, at=now, dispatched_at=now, fired=True
        )
        key = occurrence.key if claim is None else f"schedule:{schedule.id}:now:{claim}"
        return await self.turns.enqueue(
            schedule.place.thread_key,
            occurrence.payload(),
            dedupe_key=key,
            dedupe_ttl=DEDUPE_TTL,
            owner=schedule.place.stop_owner,
        )

    # --- forever ----------------------------------------------------------------------------

    def wake(self) -> None:
        """A schedule was made or resumed here: look again now, not at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        """Tick until cancelled; a state outage backs off and retries (nothing is lost: the
        occurrences stay due and run once, late, when the state is back)."""
        backoff = OUTAGE_FIRST
        while True:
            self._wake.clear()
            try:
                report = await self.tick()
                earliest = await self.store.earliest_due()
            except StateUnavailableError as error:
                log.warning("schedules: %s; retrying in %.1fs", error, backoff)
                await self._sleep(backoff)
                backoff = min(backoff * 2, OUTAGE_MAX)
                continue
            backoff = OUTAGE_FIRST
            if report.total:
                log.debug("schedules: %s", report)
            if self.on_tick is not None:
                self.on_tick(report)
            wait = self.poll if earliest is None else earliest - self.clock.now()
            if wait <= 0 and not report.total:  # due but not dispatchable: do not spin
                wait = self.poll
            await self._sleep(min(max(wait, 0.0), self.poll))

    async def _sleep(self, seconds: float) -> None:
        """Sleep on the clock, or until ``wake``."""
        sleeping = asyncio.ensure_future(self.clock.sleep(seconds))
        woken = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeping, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeping, woken):
                task.cancel()
            for task in (sleeping, woken):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
