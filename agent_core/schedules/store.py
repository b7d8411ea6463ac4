"""``ScheduleStore``: where schedules live, on the state's back end (memory, SQLite, Redis).

Every change a run or the dispatcher makes is one targeted, atomic step (never "read the
schedule, write it back"), so an owner's ``/pause`` and a process's claim cannot undo each
other:

- ``add`` checks the per-person and per-workspace caps and stores the schedule in one step;
- ``due(..., lease=)`` hands each process different due schedules in a burst;
- ``advance`` is the claim: it moves ``next_due`` from the occurrence a process read to the
  next one only if it is still that occurrence (compare and set). Together with the turn
  queue's dedupe key (schedule id + occurrence), each occurrence runs once, whatever the
  processes' clocks say;
- ``swap_alert_state`` sets an alert's condition and returns what it was (the transition),
  the same answer again for a re-run of the same occurrence;
- ``note_once`` records a one-time notice and says whether it is the first.

``pause_workspace`` is the admins' "pause all": the dispatcher skips a paused workspace's
occurrences (they do not pile up for later).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.errors import AgentError, ThreadlineError
from agent_core.schedules.model import LastRun, Schedule

DEFINITION_FIELDS = frozenset(
    {"id", "workspace", "owner", "owner_name", "place", "recurrence", "question", "alert"}
    | {"created_at"}
)
"""What never changes after creation (stored as one JSON document)."""


class ScheduleLimits(BaseModel):
    """How many schedules a person, and a workspace, may have (drafts count).

    >>> ScheduleLimits().per_person, ScheduleLimits().per_workspace
    (25, 500)
    """

    model_config = ConfigDict(frozen=True)

    per_person: int = Field(25, ge=1)
    per_workspace: int = Field(500, ge=1)


class ScheduleIdTaken(ThreadlineError):
    """A new schedule's id is another schedule's (ids are short: rare, not impossible);
    nothing saved, and the caller picks another id."""


class ScheduleLimitError(AgentError):
    """A new schedule over a cap: said plainly, nothing saved.

    >>> str(ScheduleLimitError("person", 25)).startswith("You already have 25 schedules")
    True
    """

    def __init__(self, scope: str, limit: int) -> None:
        if scope == "person":
            message = (
                f"You already have {limit} schedules, the most one person may have. "
                "Remove one with `/unschedule <id>` first (`/schedules` lists them)."
            )
        else:
            message = (
                f"This workspace already has {limit} schedules, the most it may have. "
                "Ask an admin to remove some first."
            )
        super().__init__(message)
        self.scope = scope


def definition(schedule: Schedule) -> str:
    """The unchanging part of ``schedule`` as one JSON document."""
    return schedule.model_dump_json(include=set(DEFINITION_FIELDS))


def assemble(
    document: str,
    *,
    status: str,
    paused_reason: str | None,
    next_due: float,
    alert_state: bool | None,
    notices: list[str] | None = None,
    last_run: str | None = None,
) -> Schedule:
    """A ``Schedule`` from its stored parts (the inverse of ``definition`` + the fields)."""
    fields: dict[str, Any] = json.loads(document)
    fields.update(
        status=status,
        paused_reason=paused_reason or None,
        next_due=next_due,
        alert_state=alert_state,
        notices=frozenset(notices or ()),
        last_run=LastRun.model_validate_json(last_run) if last_run else None,
    )
    return Schedule.model_validate(fields)


def state_text(holds: bool | None) -> str:
    """An alert state as stored: ``""`` (never checked), ``"0"`` or ``"1"``."""
    return "" if holds is None else ("1" if holds else "0")


def state_value(text: str | None) -> bool | None:
    return None if not text else text == "1"


class ScheduleStore(ABC):
    """The operations on schedules (see the module docstring).

    >>> import asyncio
    >>> from agent_core.schedules.store_memory import MemoryScheduleStore
    >>> store = MemoryScheduleStore()
    >>> asyncio.run(store.due(0.0, limit=10))
    []
    """

    @abstractmethod
    async def add(self, schedule: Schedule, *, limits: ScheduleLimits) -> None:
        """Store a new schedule; ``ScheduleLimitError`` when a cap is reached,
        ``ScheduleIdTaken`` when its id is another schedule's."""

    @abstractmethod
    async def get(self, schedule_id: str) -> Schedule | None: ...

    @abstractmethod
    async def owned_by(self, owner: str) -> list[Schedule]:
        """The owner's schedules, oldest first."""

    @abstractmethod
    async def in_workspace(self, workspace: str) -> list[Schedule]:
        """The workspace's schedules, oldest first."""

    @abstractmethod
    async def every(self, *, limit: int = 10_000) -> list[Schedule]:
        """All schedules (operators: ``threadline schedules``), oldest first."""

    @abstractmethod
    async def remove(self, schedule_id: str) -> bool: ...

    @abstractmethod
    async def pause(self, schedule_id: str, reason: str) -> Schedule | None:
        """Stop running it (it stays listed); the paused schedule, None when unknown."""

    @abstractmethod
    async def resume(self, schedule_id: str, next_due: float) -> Schedule | None:
        """Run it again from ``next_due`` (a draft: confirm it); one-time notices are
        forgotten. None when unknown."""

    @abstractmethod
    async def due(self, now: float, *, limit: int, lease: float = 0.0) -> list[Schedule]:
        """Active schedules whose ``next_due`` is at or before ``now``, earliest first.

        With ``lease`` they are leased for that many seconds: until the lease ends or the
        claim (``advance``) moves them on, ``due`` passes them over, so processes share a
        burst instead of each trying every schedule. A lease is only that: the claim is
        still the compare-and-set, so an expired lease never makes a second run."""

    @abstractmethod
    async def advance(
        self, schedule_id: str, *, expected: float, next_due: float, last_run: LastRun | None
    ) -> bool:
        """The claim: ``next_due`` becomes ``next_due`` if it still is ``expected``."""

    @abstractmethod
    async def record_run(self, schedule_id: str, last_run: LastRun) -> None: ...

    @abstractmethod
    async def swap_alert_state(
        self, schedule_id: str, holds: bool, *, occurrence: str
    ) -> bool | None:
        """Set whether the alert's condition holds; what it was before (None: never
        checked). Idempotent per ``occurrence``: a re-run of the same occurrence (its first
        run crashed) gets the same answer, so a transition is neither lost nor doubled."""

    @abstractmethod
    async def note_once(self, schedule_id: str, notice: str) -> bool:
        """Record a one-time notice; True the first time (say it), False after."""

    @abstractmethod
    async def forget_notice(self, schedule_id: str, notice: str) -> None:
        """The notice's cause went away (the database is back): say it again next time."""

    @abstractmethod
    async def pause_workspace(self, workspace: str, paused: bool) -> None: ...

    @abstractmethod
    async def paused_workspaces(self) -> frozenset[str]: ...

    @abstractmethod
    async def earliest_due(self) -> float | None:
        """The earliest ``next_due`` of an active schedule (how long the dispatcher sleeps)."""

    async def close(self) -> None:
        return None
