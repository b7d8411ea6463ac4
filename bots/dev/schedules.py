"""Schedules in the console: the commands typed in it, the runs at their times, and "Run now".

The console's schedules live in this process (``MemoryScheduleStore``) and run through the
console's own turn host, like any question. A run is ``bots.schedules.run`` (the same for
every channel) and this is its console ``RunChannel``: a page turn shown in both panes, the
marker first in the answer. ``GET /api/schedules`` lists the schedules;
``POST /api/schedules/{id}/fire`` runs the next occurrence now
(``ScheduleDispatcher.fire_now``: it does not run again at its time) and streams it to the
page like an answer. The owner's time zone is the browser's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from adapters.reach import Person
from adapters.stream import ReplyStream
from agent_core.channel import ChannelMetadata
from agent_core.clock import instant
from agent_core.components import NotificationComponent, UiComponent
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.runs import Audience
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.wording import when
from agent_core.state.turns import Turn as QueuedTurn
from agent_core.state.turns import TurnQueue
from agent_core.users import RequestContext
from bots.agents import ServedAgent
from bots.dev.identity import Persona, conversation_key
from bots.dev.slots import NoSlot
from bots.schedules.run import RunSlot, ScheduledRun
from bots.schedules.service import BotSchedules
from bots.turns import Answering, Outcome, Route, Slot, Stop


class PageTurn(Protocol):
    """A turn the page shows (``bots.dev.turns.Turn``)."""

    id: str
    persona: Persona
    thread_id: str
    text: str
    timezone: str | None
    queued_id: str | None

    @property
    def conversation_id(self) -> str: ...


class Page(Protocol):
    """What the schedules need of the console (``bots.dev.turns.Console``)."""

    agent: ServedAgent
    base_url: str

    @property
    def queue(self) -> TurnQueue: ...

    def page_turn(self, persona: Persona, thread_id: str, text: str, base_url: str) -> PageTurn:
        """A page turn shown in both panes, with no question of the page behind it."""
        ...

    def ended(self, turn: Any, state: Any, error: BaseException | None = None) -> None: ...

    def reply(self, turn: Any, stop: Stop, first: Sequence[UiComponent] = ()) -> ReplyStream:
        """The turn's reply stream: the developer pane and both channels, ``first`` shown
        as it opens."""
        ...

    async def show(self, turn: Any, component: UiComponent) -> None:
        """One component in the turn's panes, outside any answer."""
        ...


class ConsoleState:
    """The console's schedules and turn queue (a ``bots.schedules.service.ScheduleState``)."""

    def __init__(self, turns: TurnQueue) -> None:
        self.schedules = MemoryScheduleStore()
        self.turns = turns


class ConsoleSchedules:
    """See the module docstring.

    >>> from agent_core.state import MemoryTurnQueue
    >>> from types import SimpleNamespace
    >>> console = SimpleNamespace(agent=None, queue=MemoryTurnQueue())
    >>> ConsoleSchedules(console).fired  # type: ignore[arg-type]
    {}
    """

    platform = "console"

    def __init__(self, console: Page, settings: ScheduleSettings | None = None) -> None:
        self.console = console
        self.schedules = BotSchedules(ConsoleState(console.queue), console.agent, settings)
        self.fired: dict[str, PageTurn] = {}
        """Page turns waiting for the run the page asked for (by schedule id)."""
        self.run: ScheduledRun[PageSlot] = ScheduledRun(self.schedules, self)
        """A scheduled run (``bots.schedules.run``), through the console."""

    # --- commands -----------------------------------------------------------------------------

    async def command(self, page: PageTurn, queued_id: str) -> Outcome | None:
        """Answer ``page`` when it is a schedule command (None otherwise)."""
        command = parse_command(page.text)
        if command is None:
            return None
        reply = await self.schedules.command(
            command,
            page.persona.request_context(page.thread_id),
            place=self.place(page),
            workspace="console",
            timezone=page.timezone,
            turn_id=queued_id,
        )
        await self.console.show(page, reply)
        return "completed"

    @staticmethod
    def place(page: PageTurn) -> Place:
        persona = page.persona
        return Place(
            thread_key=f"console:{page.conversation_id}",
            stop_owner=persona.user_id,
            context=dict(persona.request_context(page.thread_id).metadata),
            reference={"persona": persona.model_dump(), "thread_id": page.thread_id},
        )

    # --- the page's side ----------------------------------------------------------------------

    async def listing(self) -> list[dict[str, Any]]:
        """Every schedule, as the page lists it."""
        found = await self.schedules.store.every()
        return [self._row(schedule) for schedule in found]

    @staticmethod
    def _row(schedule: Schedule) -> dict[str, Any]:
        zone = schedule.recurrence.timezone
        last = schedule.last_run
        return {
            "id": schedule.id,
            "owner": schedule.owner_name or schedule.owner,
            "kind": "alert" if schedule.is_alert else "question",
            "schedule": schedule.describe(zone=True),
            "question": schedule.question,
            "status": schedule.status,
            "paused_reason": schedule.paused_reason,
            "next_run": when(schedule.due_at, zone) if schedule.status == "active" else None,
            "last_run": None if last is None else f"{when(instant(last.at), zone)}: {last.outcome}",
            "place": Persona.model_validate(schedule.place.reference.get("persona", {})).place,
        }

    async def fire(self, schedule_id: str, base_url: str) -> PageTurn | None:
        """Run ``schedule_id``'s next occurrence now; the page turn that shows it, or None
        when it is unknown, paused or waiting for confirmation."""
        schedule = await self.schedules.store.get(schedule_id)
        if schedule is None or schedule.status != "active":
            return None
        page = self._page_for(schedule, base_url)
        self.fired[schedule.id] = page
        if await self.schedules.dispatcher.fire_now(schedule.id) is None:
            self.fired.pop(schedule.id, None)
            self.console.ended(page, "done")
        return page

    def _page_for(self, schedule: Schedule, base_url: str) -> PageTurn:
        reference = schedule.place.reference
        persona = Persona.model_validate(reference.get("persona", {}))
        thread = str(reference.get("thread_id") or os.urandom(4).hex())
        return self.console.page_turn(persona, thread, schedule.question, base_url)

    # --- scheduled runs (``bots.schedules.run``: this is the console's ``RunChannel``) -------

    def route(self, occurrence: Occurrence) -> Route:
        """The run's turn, and its page told when it ends (nothing posted: done)."""
        run, console = self.run, self.console

        async def answer(turn: QueuedTurn, slot: Slot, stop: Stop) -> Answering | Outcome:
            assert isinstance(slot, RunSlot)
            page = slot.inner.page
            answering = await run.answer(turn, slot, stop)
            if isinstance(answering, str):
                console.ended(page, "done")
                return answering
            kept = answering.done

            async def done(outcome: Outcome) -> None:
                if kept is not None:
                    await kept(outcome)
                console.ended(page, "done" if outcome == "completed" else "error")

            return replace(answering, done=done)

        return Route(lambda turn: run.slot(turn, occurrence), answer)

    async def slot(self, turn: QueuedTurn, schedule: Schedule) -> PageSlot:
        """The page turn a scheduled run shows in (the one "Run now" opened, or a new one)."""
        page = self.fired.pop(schedule.id, None)
        if page is None:
            page = self._page_for(schedule, self.console.base_url)
        page.queued_id = turn.id
        return PageSlot(page)

    async def alone(self, run: RunSlot[PageSlot]) -> bool:
        """Never: a console run answers in its place, the persona's place shared or not (as
        it always has; the console applies no policy to schedules' places)."""
        return False

    async def post_marker(
        self, turn: QueuedTurn, run: RunSlot[PageSlot], marker: UiComponent, *, alone: bool
    ) -> ChannelMetadata:
        """The marker leads the answer, in the same message of each pane (the page turn is
        the run's own: a re-run opens a new one); the context is the page turn's."""
        page = run.inner.page
        run.inner.marker = marker
        return {"thread_id": page.thread_id, "turn_id": page.id}

    async def reply(self, turn: QueuedTurn, run: RunSlot[PageSlot], stop: Stop) -> ReplyStream:
        """Both panes of the page turn, the marker first."""
        slot = run.inner
        marked = () if slot.marker is None else (slot.marker,)
        return self.console.reply(slot.page, stop, first=marked)

    def conversation_id(self, context: RequestContext) -> str:
        metadata = context.metadata
        return conversation_key(str(metadata["channel_id"]), str(metadata["thread_id"]))

    async def person(self, run: RunSlot[PageSlot]) -> Person:
        return Person("active")  # the console's personas never leave

    async def tell(self, run: RunSlot[PageSlot], text: str, audience: Audience) -> None:
        """A warning in the run's page turn (to the owner and the admins alike)."""
        notice = NotificationComponent(message=text, level="warning")
        await self.console.show(run.inner.page, UiComponent(rich_component=notice))


@dataclass
class PageSlot(NoSlot):
    """A scheduled run's slot in the console: its page turn, and the marker it shows first."""

    page: PageTurn
    marker: UiComponent | None = None
