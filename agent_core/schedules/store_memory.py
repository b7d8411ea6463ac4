"""``MemoryScheduleStore``: schedules in this process (tests, ``--ephemeral`` runs)."""

from __future__ import annotations

from agent_core.schedules.model import LastRun, Schedule
from agent_core.schedules.store import (
    ScheduleIdTaken,
    ScheduleLimitError,
    ScheduleLimits,
    ScheduleStore,
)


class MemoryScheduleStore(ScheduleStore):
    """A dict of schedules; every operation is atomic because it never awaits.

    >>> import asyncio
    >>> store = MemoryScheduleStore()
    >>> asyncio.run(store.paused_workspaces())
    frozenset()
    """

    def __init__(self) -> None:
        self._schedules: dict[str, Schedule] = {}
        self._paused: set[str] = set()
        self._leases: dict[str, float] = {}
        """When each leased schedule's lease ends (``due(..., lease=)``)."""
        self._alert_swaps: dict[str, tuple[str, bool | None]] = {}
        """The last swap of each alert: its occurrence and the state before it."""

    async def add(self, schedule: Schedule, *, limits: ScheduleLimits) -> None:
        kept = self._schedules.values()
        if sum(s.owner == schedule.owner for s in kept) >= limits.per_person:
            raise ScheduleLimitError("person", limits.per_person)
        if sum(s.workspace == schedule.workspace for s in kept) >= limits.per_workspace:
            raise ScheduleLimitError("workspace", limits.per_workspace)
        if schedule.id in self._schedules:
            raise ScheduleIdTaken(f"schedule {schedule.id} exists")
        self._schedules[schedule.id] = schedule

    async def get(self, schedule_id: str) -> Schedule | None:
        return self._schedules.get(schedule_id)

    def _sorted(self, schedules: list[Schedule]) -> list[Schedule]:
        return sorted(schedules, key=lambda s: (s.created_at, s.id))

    async def owned_by(self, owner: str) -> list[Schedule]:
        return self._sorted([s for s in self._schedules.values() if s.owner == owner])

    async def in_workspace(self, workspace: str) -> list[Schedule]:
        return self._sorted([s for s in self._schedules.values() if s.workspace == workspace])

    async def every(self, *, limit: int = 10_000) -> list[Schedule]:
        return self._sorted(list(self._schedules.values()))[:limit]

    async def remove(self, schedule_id: str) -> bool:
        self._alert_swaps.pop(schedule_id, None)
        self._leases.pop(schedule_id, None)
        return self._schedules.pop(schedule_id, None) is not None

    def _change(self, schedule_id: str, **changes: object) -> Schedule | None:
        schedule = self._schedules.get(schedule_id)
        if schedule is None:
            return None
        changed = schedule.model_copy(update=changes)
        self._schedules[schedule_id] = changed
        return changed

    async def pause(self, schedule_id: str, reason: str) -> Schedule | None:
        return self._change(schedule_id, status="paused", paused_reason=reason)

    async def resume(self, schedule_id: str, next_due: float) -> Schedule | None:
        self._leases.pop(schedule_id, None)
        return self._change(
            schedule_id,
            status="active",
            paused_reason=None,
            next_due=next_due,
            notices=frozenset(),
        )

    async def due(self, now: float, *, limit: int, lease: float = 0.0) -> list[Schedule]:
        found = [
            s
            for s in self._schedules.values()
            if s.status == "active" and s.next_due <= now and self._leases.get(s.id, 0.0) <= now
        ]
        taken = sorted(found, key=lambda s: (s.next_due, s.id))[:limit]
        if lease > 0:
            self._leases.update((s.id, now + lease) for s in taken)
        return taken

    async def advance(
        self, schedule_id: str, *, expected: float, next_due: float, last_run: LastRun | None
    ) -> bool:
        schedule = self._schedules.get(schedule_id)
        if schedule is None or schedule.next_due != expected:
            return False
        kept = last_run or schedule.last_run
        self._change(schedule_id, next_due=next_due, last_run=kept)
        self._leases.pop(schedule_id, None)
        return True

    async def record_run(self, schedule_id: str, last_run: LastRun) -> None:
        self._change(schedule_id, last_run=last_run)

    async def swap_alert_state(
        self, schedule_id: str, holds: bool, *, occurrence: str
    ) -> bool | None:
        schedule = self._schedules.get(schedule_id)
        if schedule is None:
            return None
        last = self._alert_swaps.get(schedule_id)
        before = last[1] if last is not None and last[0] == occurrence else schedule.alert_state
        self._alert_swaps[schedule_id] = (occurrence, before)
        self._change(schedule_id, alert_state=holds)
        return before

    async def note_once(self, schedule_id: str, notice: str) -> bool:
        schedule = self._schedules.get(schedule_id)
        if schedule is None or notice in schedule.notices:
            return False
        self._change(schedule_id, notices=schedule.notices | {notice})
        return True

    async def forget_notice(self, schedule_id: str, notice: str) -> None:
        schedule = self._schedules.get(schedule_id)
        if schedule is not None and notice in schedule.notices:
            self._change(schedule_id, notices=schedule.notices - {notice})

    async def pause_workspace(self, workspace: str, paused: bool) -> None:
        if paused:
            self._paused.add(workspace)
        else:
            self._paused.discard(workspace)

    async def paused_workspaces(self) -> frozenset[str]:
        return frozenset(self._paused)

    async def earliest_due(self) -> float | None:
        due = [s.next_due for s in self._schedules.values() if s.status == "active"]
        return min(due, default=None)
