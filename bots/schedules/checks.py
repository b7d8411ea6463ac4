"""``ChannelChecks``: a run's checks (``agent_core.schedules.runs.RunChecks``) from what a
channel says about its people and places, and the owner's access resolved again.

    the owner: the platform first (``adapters.<channel>.reach.person``: left the workspace,
               deactivated, no longer in the conversation), then the agent serving the place
               (its resolver, its allowed groups: ``bots.schedules.access``)
    the alert's query: the owner's database tool, read-only
    notices: to the owner, or to the admins, the way the channel tells people
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Unpack

from adapters.reach import Person
from agent_core.channel import ChannelMetadata
from agent_core.schedules.model import Schedule
from agent_core.schedules.runs import Audience, OwnerCheck
from agent_core.tools.sql import SqlResult
from agent_core.users import RequestContext, User
from bots.schedules.access import OwnerAccess


def owner_context(schedule: Schedule, **changes: Unpack[ChannelMetadata]) -> RequestContext:
    """The context a run asks in: the signed metadata kept when the schedule was made (the
    owner is resolved again from it), marked as scheduled, with ``changes``.

    >>> from agent_core.schedules.model import Place
    >>> from agent_core.schedules.recurrence import Recurrence
    >>> s = Schedule(id="5e1f0c2a", workspace="slack:T1", owner="slack:T1:U1",
    ...              place=Place(thread_key="k", context={"user_id": "U1"}),
    ...              recurrence=Recurrence(frequency="daily", hour=9), question="q",
    ...              created_at=0.0, next_due=0.0)
    >>> owner_context(s, thread_id="9.0").metadata
    {'user_id': 'U1', 'thread_id': '9.0', 'scheduled_by': '5e1f0c2a'}
    """
    return RequestContext(
        metadata={**schedule.place.context, "scheduled_by": schedule.id, **changes}
    )


@dataclass(frozen=True)
class ChannelChecks:
    """See the module docstring; ``person`` and ``notify`` are the channel's."""

    access: OwnerAccess
    person: Callable[[Schedule], Awaitable[Person]]
    notify: Callable[[Schedule, str, Audience], Awaitable[None]]

    async def check_owner(self, schedule: Schedule) -> OwnerCheck:
        found = await self.person(schedule)
        if found.standing == "gone":  # "unknown" (the platform could not say) goes on
            return OwnerCheck("gone", reason=found.reason or "is no longer in the workspace")
        return await self.access.check(owner_context(schedule))

    async def query(self, schedule: Schedule, owner: User, sql: str) -> SqlResult:
        return await self.access.query(owner_context(schedule), owner, sql)

    async def tell(self, schedule: Schedule, text: str, *, audience: Audience) -> None:
        await self.notify(schedule, text, audience)
