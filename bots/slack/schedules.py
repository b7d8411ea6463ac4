"""Schedules in the Slack bot (``bots.schedules``): the schedule commands a turn carries, and
the turns the dispatcher makes of due occurrences. ``SlackWing`` asks here first.

- **Commands** (``/schedule`` as Slack's slash command, answered privately; a mention
  "@Threadline every Monday 9am: ..."; the Pause, Confirm and Remove buttons) are answered
  without the model: the asker is resolved as for a question, their time zone is Slack's
  ``tz`` of them (``users.info``), and the schedule's place is where they asked: the
  channel (each run then opens a thread of its own) or the thread.
- **A scheduled turn** asks ``ScheduleRunner.prepare`` what to do (the owner again: Slack
  first, deactivated or gone; then the agent's resolver and groups), posts the marker
  ("Scheduled by @ana · every weekday 9:00", with Pause) as the run's first message, and
  hands the turn host an ``Answering`` as the owner. A marker Slack refuses for good
  (``not_in_channel``, ``channel_not_found``, ``is_archived``) pauses the schedule and the
  owner is told once, in their DM with the app; the admins (``SLACK_ADMIN_USERS``, else the
  place itself) when the owner is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from adapters.reach import Person
from adapters.slack import reach
from adapters.slack.context import PRIVATE_THREAD, conversation_id, reply_target, turn_key
from adapters.slack.errors import SlackCallFailed
from adapters.slack.slot import AnswerSlot, PostedMessages
from adapters.slack.stream import SlackReplyStream
from agent_core.errors import AgentError
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.removed import RemovedNotice
from agent_core.schedules.runs import Audience
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.places import told_privately
from bots.schedules.checks import ChannelChecks, owner_context
from bots.schedules.service import BotSchedules
from bots.slack.clients import WorkspaceClients
from bots.turns import Answering, Outcome, Stop

log = logging.getLogger(__name__)

Privately = Callable[[AsyncWebClient, Mapping[str, Any]], Awaitable[bool]]
"""Whether a schedule's place (its metadata) is read by another organisation now, so the
run's answer goes to its owner alone (``bots.slack.bot``: ``SlackPlaces`` + the policy)."""


class Asked(Protocol):
    """What a recorded Slack turn says about its question (``bots.slack.turns.SlackAsked``)."""

    @property
    def context(self) -> Mapping[str, Any]: ...

    @property
    def text(self) -> str: ...

    @property
    def private(self) -> bool: ...

    @property
    def open_thread(self) -> bool: ...

    @property
    def team(self) -> str: ...

    @property
    def owner(self) -> str: ...


class SlackSchedules:
    """See the module docstring.

    >>> from types import SimpleNamespace
    >>> SlackSchedules(SimpleNamespace(), SimpleNamespace()).admins  # type: ignore[arg-type]
    ()
    """

    def __init__(
        self,
        schedules: BotSchedules,
        clients: WorkspaceClients,
        *,
        admins: Sequence[str] = (),
        stop_button_after: float | None = 3.0,
        flush_chars: int = 1000,
        stream_interval: float = 1.0,
        privately: Privately | None = None,
    ) -> None:
        self.schedules = schedules
        self.clients = clients
        self.privately = privately
        self.admins = tuple(admins)
        self.stop_button_after = stop_button_after
        self.flush_chars = flush_chars
        self.stream_interval = stream_interval

    # --- commands -----------------------------------------------------------------------------

    async def command(self, turn: Turn, queued: Asked, slot: AnswerSlot) -> Outcome | None:
        """Answer ``queued`` when it is a schedule command (None otherwise)."""
        command = parse_command(queued.text)
        if command is None:
            return None
        person = await reach.person(slot.client, str(queued.context["user_id"]))
        reply = await self.schedules.command(
            command,
            RequestContext(metadata=dict(queued.context)),
            place=self.place(queued),
            workspace=f"slack:{queued.team}",
            timezone=person.timezone,
            turn_id=turn.id,
        )
        async with SlackReplyStream(slot.client, slot.target, slot=slot) as stream:
            await stream.handle(reply)
            await stream.finish()
        await turn.record_at_end(answered=True)
        return "completed"

    @staticmethod
    def place(queued: Asked) -> Place:
        """Where a schedule made by ``queued`` posts: its thread, or (a slash command, or a
        message at the top of a channel) the channel, where each run opens its own thread."""
        metadata = dict(queued.context)
        metadata.pop("turn_id", None)
        thread = str(metadata.get("thread_id") or "")
        if queued.private or queued.open_thread or thread == PRIVATE_THREAD:
            thread = ""
        metadata["thread_id"] = thread
        context = RequestContext(metadata=metadata)
        key = turn_key(context) if thread else turn_key(context, opens_thread=True)
        return Place(thread_key=key, stop_owner=queued.owner, context=metadata)

    # --- scheduled turns ----------------------------------------------------------------------

    async def slot(self, turn: Turn, occurrence: Occurrence) -> AnswerSlot | None:
        """Where a scheduled run posts (what an earlier run of it posted); None when the
        schedule or its workspace is gone (logged)."""
        schedule = await self.schedules.store.get(occurrence.schedule_id)
        if schedule is None:
            log.info("slack: schedule %s is gone; its run %s is dropped", *_ids(turn, occurrence))
            return None
        metadata = schedule.place.context
        team = str(metadata.get("workspace_id") or "")
        try:
            client = await self.clients.client_for(team, metadata.get("slack_enterprise_id"))
        except AgentError as error:
            log.info("slack: schedule %s of workspace %s not run (%s)", schedule.id, team, error)
            return None

        async def posted(messages: PostedMessages) -> None:
            await turn.record(**messages.as_progress())

        previous = PostedMessages.from_progress(turn.progress)
        target = reply_target(RequestContext(metadata=dict(metadata)), turn_id=turn.id)
        thread = previous.thread_ts or str(metadata.get("thread_id") or "")
        target = replace(target, thread_ts=thread, private=False)
        return AnswerSlot(client, target, posted=previous, on_posted=posted)

    async def notice_slot(self, turn: Turn, notice: RemovedNotice) -> AnswerSlot | None:
        """Where a removed schedule's line goes (``agent_core.schedules.removed``)."""
        team = str(notice.context.get("workspace_id") or "")
        try:
            client = await self.clients.client_for(team, notice.context.get("slack_enterprise_id"))
        except AgentError as error:
            log.info("slack: schedule %s's removal not told (%s)", notice.schedule_id, error)
            return None
        where = {**notice.context, "user_id": ""}  # nobody's: the line goes to the place
        return AnswerSlot(client, reply_target(RequestContext(metadata=where), turn_id=turn.id))

    async def tell_removed(self, notice: RemovedNotice, slot: AnswerSlot) -> Outcome:
        """Post a removed schedule's one line into its place (its thread, if it had one)."""
        thread = str(notice.context.get("thread_id") or "") or None
        channel = str(notice.context.get("channel_id") or "")
        told = await reach.tell(slot.client, channel, notice.text, thread_ts=thread)
        return "completed" if told else "dropped"

    async def answer(
        self, turn: Turn, occurrence: Occurrence, slot: AnswerSlot, stop: Stop
    ) -> Answering | Outcome:
        """What a scheduled turn does: nothing posted (an alert that did not fire, a paused
        schedule), or the owner's question answered after its marker."""
        runner = self.schedules.runner
        schedule = await self.schedules.store.get(occurrence.schedule_id)
        if schedule is None:
            return "dropped"
        checks = self._checks(slot, schedule)
        step = await runner.prepare(turn, occurrence, checks)
        if isinstance(step, str):
            await runner.finished(turn, occurrence, step)
            return "completed"
        if turn.is_retry:
            await slot.retract()  # the dead run's partial answer (its marker stays)
        if self.privately is not None and await self.privately(slot.client, schedule.place.context):
            return self._to_the_owner(turn, occurrence, schedule, slot, step.prompt)
        try:
            thread = await slot.open_marked(step.marker_component())
        except SlackCallFailed as error:
            gone = reach.place_gone(error)
            await runner.not_posted(
                turn, occurrence, schedule, checks, failure=str(error.failure), gone=gone
            )
            return "dropped"
        context = owner_context(schedule, thread_id=thread, turn_id=turn.id)
        return Answering(
            context,
            step.prompt,
            self._reply(turn, slot),
            conversation_id=conversation_id(context),
            done=runner.on_answered(turn, occurrence, schedule),
        )

    def _reply(self, turn: Turn, slot: AnswerSlot) -> SlackReplyStream:
        """The run's answer, streamed where ``slot`` points (the place, or the owner alone)."""
        return SlackReplyStream(
            slot.client,
            slot.target,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            flush_chars=self.flush_chars,
            flush_interval=self.stream_interval,
        )

    def _to_the_owner(
        self, turn: Turn, occurrence: Occurrence, schedule: Schedule, slot: AnswerSlot, prompt: str
    ) -> Answering:
        """A run whose place became shared with another organisation: no marker there, the
        answer (and why) to the owner alone, as ephemeral messages in the place."""
        slot.target = replace(slot.target, thread_ts=PRIVATE_THREAD, private=True)
        context = owner_context(schedule, thread_id=PRIVATE_THREAD, turn_id=turn.id)
        return Answering(
            context,
            prompt,
            self._reply(turn, slot),
            conversation_id=conversation_id(context),
            done=self.schedules.runner.on_answered(turn, occurrence, schedule),
            shown_first=[told_privately()],
            audience="asker",
        )

    def _checks(self, slot: AnswerSlot, schedule: Schedule) -> ChannelChecks:
        client, metadata = slot.client, schedule.place.context

        async def person(schedule: Schedule) -> Person:
            return await reach.person(client, str(metadata.get("user_id") or ""))

        async def notify(schedule: Schedule, text: str, audience: Audience) -> None:
            if audience == "owner":
                await reach.tell(client, str(metadata.get("user_id") or ""), text)
                return
            for admin in self.admins:
                await reach.tell(client, admin, text)
            if not self.admins:  # no admin configured: say it where the schedule posts
                thread = str(metadata.get("thread_id") or "") or None
                await reach.tell(client, str(metadata["channel_id"]), text, thread_ts=thread)

        return ChannelChecks(self.schedules.access, person, notify)


def _ids(turn: Turn, occurrence: Occurrence) -> tuple[str, str]:
    return occurrence.schedule_id, turn.id
