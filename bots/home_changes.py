"""``HomeChanges``: what changed that people's homes show, noted for a channel's refresher
(``bots.slack.home``; a channel whose homes are not refreshed has none).

    a schedule made, changed, removed or run   -> its owner       (``BotSchedules``)
    an MCP server connected or disconnected    -> that person     (``McpHub.watch``)
    an approval shown or decided               -> the approval    (``Approvals``)

Noting is synchronous and does no I/O: a turn never waits for a home. The notes are built
before what tells them and what reads them (the runtime hands them to both), so no piece is
told afterwards where changes go. At most ``max_people`` people and ``max_approvals``
approvals wait (more are dropped, logged: a home is right again when it is opened).
"""

from __future__ import annotations

import asyncio
import logging

from agent_core.schedules.model import Schedule

log = logging.getLogger(__name__)

MAX_WAITING = 500
"""People whose home waits for a refresh in this process at most (more are dropped)."""
MAX_APPROVALS_WAITING = 100
"""Approvals whose deciders' homes wait for a refresh at most (more are dropped)."""


class HomeChanges:
    """See the module docstring; ``platform`` is the channel whose people have homes.

    >>> changes = HomeChanges("slack")
    >>> changes.person_changed("slack:T1:U1"); changes.person_changed("teams:t:a")
    >>> changes.take_people()
    {'slack:T1:U1'}
    """

    def __init__(
        self,
        platform: str,
        *,
        max_people: int = MAX_WAITING,
        max_approvals: int = MAX_APPROVALS_WAITING,
    ) -> None:
        self.platform = platform
        self.max_people = max_people
        self.max_approvals = max_approvals
        self._people: set[str] = set()
        self._approvals: set[str] = set()
        self._wake = asyncio.Event()

    def schedule_changed(self, schedule: Schedule) -> None:
        """A schedule was made, changed or run: its owner's home, soon."""
        self.person_changed(schedule.owner)

    def person_changed(self, person: str) -> None:
        """Something of ``person`` (a ``User.id``: their schedules, their connections)
        changed: their home, soon (another channel's person has no home here)."""
        if person.startswith(f"{self.platform}:"):
            self._note(self._people, person, self.max_people)

    def approval_changed(self, approval_id: str) -> None:
        """An approval was opened or decided: the homes of those who may decide it."""
        self._note(self._approvals, approval_id, self.max_approvals)

    def shown(self, person: str) -> None:
        """``person``'s home was just published: what its waiting refresh would show."""
        self._people.discard(person)

    def take_approvals(self) -> set[str]:
        """The approvals noted since the last take (the notes start again)."""
        approvals, self._approvals = self._approvals, set()
        return approvals

    def take_people(self) -> set[str]:
        """The people noted since the last take (the notes start again)."""
        people, self._people = self._people, set()
        return people

    async def settled(self, delay: float) -> None:
        """Until something was noted, and ``delay`` seconds more (more changes of the same
        homes join that round)."""
        await self._wake.wait()
        await asyncio.sleep(delay)
        self._wake.clear()

    def _note(self, waiting: set[str], item: str, limit: int) -> None:
        if item not in waiting and len(waiting) >= limit:
            log.warning("%s: too many homes to refresh; %s is not refreshed", self.platform, item)
            return
        waiting.add(item)
        self._wake.set()
