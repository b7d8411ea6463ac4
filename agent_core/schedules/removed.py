"""The one line a schedule's place is told when ``forget`` removes the schedule.

``threadline forget`` may run anywhere (a CLI on an admin's laptop, a CronJob), with no
Slack or Teams client. So it does not post: for each schedule it removes it queues one turn
on the state's turn queue (the path every scheduled run takes), on the schedule's own
thread key, with a dedupe key of its own (a second ``forget`` of the same schedule queues
nothing). Whichever bot process of the schedule's channel claims it posts the line into the
place (``bots.slack.turns`` / ``bots.teams.turns``), once, like a paused schedule's notice.
With no bot running it waits on the queue and is posted when one starts.

The notice keeps only where to post: the place's workspace, channel and thread (Slack) or
its conversation reference with the person's account blanked (Teams). It does not name the
erased person.

>>> from agent_core.schedules.model import Place, Schedule
>>> from agent_core.schedules.recurrence import Recurrence
>>> s = Schedule(id="5e1f0c2a", workspace="slack:T1", owner="slack:T1:U1", owner_name="ana",
...              place=Place(thread_key="slack:T1:C1:1.0",
...                          context={"user_id": "U1", "channel_id": "C1", "workspace_id": "T1"}),
...              recurrence=Recurrence(frequency="weekdays", hour=9), question="q",
...              created_at=0.0, next_due=0.0)
>>> notice = RemovedNotice.of(s, ERASED)
>>> notice.context
{'workspace_id': 'T1', 'channel_id': 'C1'}
>>> print(notice.text.replace(" that", "\\nthat"))
The schedule `5e1f0c2a` (every weekday 9:00)
that posted here was removed: the person who made it was erased.
>>> RemovedNotice.from_payload(notice.payload()) == notice
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from agent_core.schedules.carried import Carried
from agent_core.schedules.model import Schedule

if TYPE_CHECKING:
    from agent_core.state.turns import TurnQueue

ERASED = "the person who made it was erased"
WHERE = ("workspace_id", "slack_enterprise_id", "channel_id", "thread_id", "tenant_id")
"""The place's context kept in a notice: where, never who."""
KEEP = 7 * 24 * 3600.0
"""How long the queue remembers a notice's dedupe key."""


class RemovedNotice(Carried):
    """One removed schedule's line and where it goes; see the module docstring."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["schedule_removed"] = "schedule_removed"

    schedule_id: str
    workspace: str
    thread_key: str
    text: str
    context: dict[str, Any] = Field(default_factory=dict)
    reference: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, schedule: Schedule, why: str) -> RemovedNotice:
        place = schedule.place
        reference = {**place.reference, "user": {}} if place.reference else {}
        return cls(
            schedule_id=schedule.id,
            workspace=schedule.workspace,
            thread_key=place.thread_key,
            text=(
                f"The schedule `{schedule.id}` ({schedule.describe()}) that posted here "
                f"was removed: {why}."
            ),
            context={key: place.context[key] for key in WHERE if key in place.context},
            reference=reference,
        )


async def queue_notice(turns: TurnQueue, schedule: Schedule, why: str) -> bool:
    """Queue the line for ``schedule``'s place; False when it was queued already."""
    notice = RemovedNotice.of(schedule, why)
    queued = await turns.enqueue(
        notice.thread_key,
        notice.payload(),
        dedupe_key=f"schedule:{schedule.id}:removed",
        dedupe_ttl=KEEP,
    )
    return queued is not None
