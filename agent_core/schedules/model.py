"""``Schedule``: one question (or alert) on a recurrence, owned by the person who made it.

What the owner wrote never changes after creation (the recurrence, the question, where it
posts, the alert's SQL); what the dispatcher and the runs change lives beside it:
``status``, ``next_due`` (the next run, the claim every process compares against),
``alert_state`` (was the condition true at the last check), ``notices`` (the one-time
notices already given) and ``last_run``.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.schedules.alerts import AlertRule
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.wording import describe

Status = Literal["active", "paused", "draft"]
"""``draft``: an alert waiting for its owner's confirmation (never due)."""


def new_schedule_id() -> str:
    """Eight hex characters: short enough to type after ``/unschedule``.

    >>> len(new_schedule_id())
    8
    """
    return secrets.token_hex(4)


class Place(BaseModel):
    """Where a schedule was made, so its runs post there and keep its thread's order.

    ``thread_key`` is the turn queue's ordering key; ``stop_owner`` who may stop a run
    (the queue's ``owner``); ``context`` the channel's ``RequestContext`` metadata at
    creation (workspace, channel, thread or DM), from the signed request: each run rebuilds
    the owner's context from it and resolves the owner again.

    >>> Place(thread_key="slack:T1:C1:1.0", context={"channel_id": "C1"}).context["channel_id"]
    'C1'
    """

    model_config = ConfigDict(frozen=True)

    thread_key: str
    stop_owner: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    reference: dict[str, Any] = Field(default_factory=dict)
    """What else the channel needs to post there without a request (Teams: the conversation
    reference)."""


class LastRun(BaseModel):
    """What the latest run did, for ``/schedules`` and the console.

    >>> LastRun(at=0.0, outcome="posted").outcome
    'posted'
    """

    model_config = ConfigDict(frozen=True)

    at: float
    outcome: str
    late_by: float = 0.0


class Schedule(BaseModel):
    """A schedule as the store keeps it (see the module docstring).

    >>> from agent_core.schedules.recurrence import Recurrence
    >>> schedule = Schedule(
    ...     id="5e1f0c2a", workspace="slack:T1", owner="slack:T1:U1", owner_name="ana",
    ...     place=Place(thread_key="slack:T1:C1:1.0"),
    ...     recurrence=Recurrence(frequency="weekdays", hour=9),
    ...     question="revenue yesterday by region", created_at=0.0, next_due=32400.0)
    >>> schedule.marker()
    'Scheduled by @ana · every weekday 9:00'
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_schedule_id, pattern=r"^[0-9a-f]{8}$")
    workspace: str
    """``slack:T1`` / ``teams:<tenant>``: whose admins may see and pause it, whose cap."""
    owner: str
    """The owner's ``User.id`` at creation; every run resolves the owner again."""
    owner_name: str | None = None
    place: Place
    recurrence: Recurrence
    question: str
    alert: AlertRule | None = None
    created_at: float
    status: Status = "active"
    paused_reason: str | None = None
    next_due: float
    alert_state: bool | None = None
    notices: frozenset[str] = frozenset()
    last_run: LastRun | None = None

    @property
    def is_alert(self) -> bool:
        return self.alert is not None

    @property
    def due_at(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.next_due, dt.UTC)

    def describe(self, *, zone: bool = False) -> str:
        """``every weekday 9:00`` (``zone``: with its time zone)."""
        return describe(self.recurrence, zone=zone)

    def marker(self) -> str:
        """The line that marks each scheduled answer (``runs.marker_component`` adds the
        pause control)."""
        who = f"@{self.owner_name}" if self.owner_name else "its owner"
        return f"Scheduled by {who} · {self.describe()}"
