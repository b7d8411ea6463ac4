"""``ScheduleCommands``: what ``/schedule``, ``/schedules``, ``/unschedule``, ``/pause``,
``/resume`` and ``/schedule run`` do, for an asker resolved from the signed request, where
they typed it.

Authority is the configuration's: a schedule may be changed by its owner, or by an admin
(``User.is_admin``: the groups ``threadline.toml`` maps) of the same workspace; anyone else
is told there is no such schedule they may change (ids are not confirmed to exist).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent_core.clock import SYSTEM_CLOCK, Clock, instant
from agent_core.components import UiComponent
from agent_core.errors import AgentError
from agent_core.schedules import replies
from agent_core.schedules.authoring import AlertAuthor
from agent_core.schedules.commands import ScheduleCommand
from agent_core.schedules.grammar import ScheduleParseError, ScheduleRequest, parse_schedule
from agent_core.schedules.model import Place, Schedule, new_schedule_id
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.store import ScheduleIdTaken, ScheduleStore
from agent_core.schedules.wording import when
from agent_core.users import User

log = logging.getLogger("threadline.schedules")
ID_ATTEMPTS = 3

Touched = Callable[[Schedule], None]
"""Told of a schedule a command made, changed, removed or ran (synchronous: a home shown
somewhere is refreshed later, the command never waits for it)."""
RunNow = Callable[[Schedule, str | None], Awaitable[str | None]]
"""Runs a schedule once now, as its occurrences run (``ScheduleDispatcher.run_once``): the
schedule, and the id of the turn that asked (a re-run of it runs nothing more)."""


@dataclass(frozen=True)
class Asker:
    """Who typed the command, resolved from the signed request, and their time zone (Slack
    ``users.info`` ``tz``; Teams the activity's ``localTimezone``).

    >>> Asker(User(id="slack:T1:U1"), workspace="slack:T1").timezone
    'UTC'
    """

    user: User
    workspace: str
    timezone: str = "UTC"
    name: str | None = None
    author: AlertAuthor | None = None
    """Who writes this asker's alerts: the model, with the data they may read where they
    ask (the commands' own ``author`` otherwise)."""

    def may_change(self, schedule: Schedule) -> bool:
        """Its owner, or an admin of its workspace."""
        if schedule.owner == self.user.id:
            return True
        return self.user.is_admin and schedule.workspace == self.workspace


class ScheduleCommands:
    """Runs schedule commands against ``store`` (see the module docstring); ``changed`` is
    called when a schedule may now be due sooner (the dispatcher's ``wake``); ``run_now``
    runs one once now (without it, ``/schedule run`` says it is not available here);
    ``touched`` hears of each schedule a command made, changed, removed or ran.

    >>> from agent_core.schedules.store_memory import MemoryScheduleStore
    >>> ScheduleCommands(MemoryScheduleStore()).settings.per_person
    25
    """

    def __init__(
        self,
        store: ScheduleStore,
        *,
        settings: ScheduleSettings | None = None,
        clock: Clock | None = None,
        author: AlertAuthor | None = None,
        changed: Callable[[], None] | None = None,
        run_now: RunNow | None = None,
        touched: Touched | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or ScheduleSettings()
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.author = author
        self._changed = changed or (lambda: None)
        self._run_now = run_now
        self._touched = touched or (lambda schedule: None)

    async def handle(
        self, command: ScheduleCommand, asker: Asker, place: Place, *, new_id: str | None = None
    ) -> UiComponent:
        """The reply to ``command`` (refusals included: they are replies, not errors).

        ``new_id`` names the schedule ``/schedule`` makes (derived from the turn that asked):
        a re-run of that turn after a crash finds it made and confirms it again, never a
        second one."""
        if not self.settings.enabled:
            return replies.card("Schedules are off", "Scheduled questions are turned off here.")
        try:
            return await self._handle(command, asker, place, new_id)
        except AgentError as refused:  # the bot doing its job: said plainly, logged once
            log.info(
                "schedule command %s refused for %s: %s",
                command.action,
                asker.user.id,
                str(refused).splitlines()[0],
            )
            return replies.card("I could not do that", str(refused), "warning", private=True)

    async def _handle(
        self, command: ScheduleCommand, asker: Asker, place: Place, new_id: str | None
    ) -> UiComponent:
        match command.action:
            case "schedule":
                return await self._schedule(command, asker, place, new_id)
            case "list":
                return await self._list(asker)
            case "pause_all" | "resume_all":
                return await self._pause_all(asker, paused=command.action == "pause_all")
            case "usage":
                return replies.usage(command.argument or "schedule")
        schedule = await self.store.get(command.argument)
        if schedule is None or not asker.may_change(schedule):
            return replies.card(
                "No such schedule",
                f"There is no schedule `{command.argument}` that you may change "
                "(`/schedules` lists yours).",
                "warning",
                private=True,
            )
        reply = await self._change(command, schedule, asker, new_id)
        self._touched(schedule)
        return reply

    async def _change(
        self, command: ScheduleCommand, schedule: Schedule, asker: Asker, new_id: str | None
    ) -> UiComponent:
        match command.action:
            case "unschedule":
                await self.store.remove(schedule.id)
                text = f"`{schedule.id}` ({schedule.describe()}) is removed."
                return replies.card("Removed", text, "success")
            case "pause":
                await self.store.pause(schedule.id, f"paused by @{asker.name or asker.user.id}")
                text = f"`{schedule.id}` ({schedule.describe()}) is paused."
                actions = [("Resume", f"/resume {schedule.id}")]
                return replies.card("Paused", text, "success", actions=actions)
            case "run":
                return await self._run(schedule, asker, new_id)
            case _:
                return await self._resume(schedule, asker)

    async def _schedule(
        self, command: ScheduleCommand, asker: Asker, place: Place, new_id: str | None
    ) -> UiComponent:
        request = parse_schedule(
            command.argument,
            timezone=asker.timezone,
            min_interval=self.settings.min_interval,
            mention=command.mention,
        )
        now = instant(self.clock.now())
        if new_id is not None and (made := await self.store.get(new_id)) is not None:
            if made.owner == asker.user.id:  # a re-run of the turn that made it
                return replies.made_before(made, now, asker.timezone)
            new_id = None  # someone else's (ids are short): this one gets a fresh id
        schedule = self._new(request, asker, place, new_id)
        if request.kind == "alert":
            return await self._alert(schedule, request, asker)
        schedule = await self._add(schedule)
        self._changed()
        self._touched(schedule)
        return replies.confirmation(schedule, now, asker.timezone)

    def _new(
        self, request: ScheduleRequest, asker: Asker, place: Place, new_id: str | None
    ) -> Schedule:
        now = self.clock.now()
        return Schedule(
            id=new_id or new_schedule_id(),
            workspace=asker.workspace,
            owner=asker.user.id,
            owner_name=asker.name or asker.user.username,
            place=place,
            recurrence=request.recurrence,
            question=request.question,
            created_at=now,
            next_due=request.recurrence.next_after(instant(now)).timestamp(),
        )

    async def _add(self, schedule: Schedule) -> Schedule:
        """Store a new schedule as it is, or under a fresh id when its short id is taken
        (32 bits: rare among thousands, not impossible); the schedule stored."""
        for _ in range(ID_ATTEMPTS - 1):
            try:
                await self.store.add(schedule, limits=self.settings.limits)
                return schedule
            except ScheduleIdTaken:
                schedule = schedule.model_copy(update={"id": new_schedule_id()})
        await self.store.add(schedule, limits=self.settings.limits)
        return schedule

    async def _alert(
        self, schedule: Schedule, request: ScheduleRequest, asker: Asker
    ) -> UiComponent:
        author = asker.author or self.author
        if author is None:
            raise ScheduleParseError(
                "unreadable", "Alerts need a database to watch, and this agent has none."
            )
        authored = await author.write(asker.user, request.condition or request.question)
        draft = await self._add(
            schedule.model_copy(update={"alert": authored.rule, "status": "draft"})
        )
        self._touched(draft)
        return replies.alert_draft(draft, authored.check, instant(self.clock.now()), asker.timezone)

    async def _list(self, asker: Asker) -> UiComponent:
        if asker.user.is_admin:
            found = await self.store.in_workspace(asker.workspace)
            return replies.listing(found, asker.timezone, everyone=True)
        found = await self.store.owned_by(asker.user.id)
        return replies.listing(found, asker.timezone, everyone=False)

    async def _pause_all(self, asker: Asker, *, paused: bool) -> UiComponent:
        if not asker.user.is_admin:
            text = "Only an admin may pause or resume every schedule of the workspace."
            return replies.card("Access Denied", text, "error", private=True)
        await self.store.pause_workspace(asker.workspace, paused)
        if paused:
            text = (
                "Every schedule here is paused: their runs are skipped until "
                "`/schedules resume-all`."
            )
            return replies.card("All schedules paused", text, "success")
        self._changed()
        text = "Schedules here run again at their times."
        return replies.card("Schedules resumed", text, "success")

    async def _run(self, schedule: Schedule, asker: Asker, claim: str | None) -> UiComponent:
        """Run it once now, as its owner, where it posts; its next run stays as it was."""
        if self._run_now is None:
            text = "Running a schedule now is not available here; it runs at its times."
            return replies.card("Not available", text, "warning", private=True)
        if schedule.status != "active":
            text = (
                f"`{schedule.id}` is {schedule.status}, so it does not run: "
                f"`/schedule resume {schedule.id}` first."
            )
            return replies.card("Not running", text, "warning", private=True)
        await self._run_now(schedule, claim)
        text = (
            f"`{schedule.id}` ({schedule.describe()}) is running now; its answer is posted "
            f"where it always is. Its next run is still {when(schedule.due_at, asker.timezone)} "
            "(your time)."
        )
        if schedule.owner != asker.user.id:  # an admin's: every run of it is its owner's
            who = f"@{schedule.owner_name}" if schedule.owner_name else "its owner"
            text += f" It runs as {who}, with their access to data, not yours."
        return replies.card("Running now", text, "success")

    async def _resume(self, schedule: Schedule, asker: Asker) -> UiComponent:
        following = schedule.recurrence.next_after(instant(self.clock.now()))
        resumed = await self.store.resume(schedule.id, following.timestamp())
        if resumed is None:
            return replies.card("No such schedule", f"`{schedule.id}` was just removed.", "warning")
        self._changed()
        title = "Alert confirmed" if schedule.status == "draft" else "Resumed"
        text = (
            f"`{schedule.id}` ({schedule.describe()}) runs again; next "
            f"{when(following, asker.timezone)} (your time)."
        )
        return replies.card(title, text, "success", actions=[("Pause", f"/pause {schedule.id}")])
