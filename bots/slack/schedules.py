"""Schedules in the Slack bot (``bots.schedules``): the schedule commands a turn carries, and
the turns the dispatcher makes of due occurrences. ``SlackWing`` asks here first.

- **Commands** (``/schedule`` as Slack's slash command, answered privately; a mention
  "@Threadline every Monday 9am: ..."; the Pause, Confirm and Remove buttons) are answered
  without the model: the asker is resolved as for a question, their time zone is Slack's
  ``tz`` of them (``users.info``), and the schedule's place is where they asked: the
  channel (each run then opens a thread of its own) or the thread.
- **A scheduled run** is ``bots.schedules.run`` (the same for every channel); this is its
  Slack ``RunChannel``: the run's slot on the workspace's client, the marker ("Scheduled by
  @ana · every weekday 9:00", with Pause) as the run's first message, opening its thread; a
  marker Slack refuses for good (``not_in_channel``, ``channel_not_found``,
  ``is_archived``) is a place gone (the schedule pauses, its owner is told once, in their
  DM with the app; the admins, ``SLACK_ADMIN_USERS``, else the place itself, when the owner
  is gone); a place now shared: the answer to the owner alone, as ephemeral messages.
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
from agent_core.channel import ChannelMetadata
from agent_core.components import UiComponent
from agent_core.errors import AgentError
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.removed import RemovedNotice
from agent_core.schedules.runs import Audience
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.schedules.run import MarkerRefused, RunSlot, ScheduledRun
from bots.schedules.service import BotSchedules
from bots.slack.clients import WorkspaceClients
from bots.turns import Outcome, Stop

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

    platform = "slack"

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
        self.run: ScheduledRun[AnswerSlot] = ScheduledRun(schedules, self)
        """A scheduled run (``bots.schedules.run``), through this channel."""

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
        key = turn_key(context.metadata, opens_thread=not thread)
        return Place(thread_key=key, stop_owner=queued.owner, context=metadata)

    # --- scheduled runs (``bots.schedules.run``: this is Slack's ``RunChannel``) -----------

    async def slot(self, turn: Turn, schedule: Schedule) -> AnswerSlot | None:
        """Where a scheduled run posts (what an earlier run of it posted); None when the
        schedule's workspace is gone (logged)."""
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

    async def alone(self, run: RunSlot[AnswerSlot]) -> bool:
        return self.privately is not None and await self.privately(
            run.inner.client, run.schedule.place.context
        )

    async def post_marker(
        self, turn: Turn, run: RunSlot[AnswerSlot], marker: UiComponent, *, alone: bool
    ) -> ChannelMetadata:
        """The marker opens the answer's thread (or leads it in the schedule's thread); a
        re-run takes back the dead run's partial answer (its marker stays). Alone: the
        answer goes to the owner as ephemeral messages in the place, without a marker."""
        slot = run.inner
        if turn.is_retry:
            await slot.retract()
        if alone:
            slot.target = replace(slot.target, thread_ts=PRIVATE_THREAD, private=True)
            return {"thread_id": PRIVATE_THREAD}
        try:
            return {"thread_id": await slot.open_marked(marker)}
        except SlackCallFailed as error:
            raise MarkerRefused(str(error.failure), reach.place_gone(error)) from error

    async def reply(self, turn: Turn, run: RunSlot[AnswerSlot], stop: Stop) -> SlackReplyStream:
        """The run's answer, streamed where the slot points (the place, or the owner alone)."""
        slot = run.inner
        return SlackReplyStream(
            slot.client,
            slot.target,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            flush_chars=self.flush_chars,
            flush_interval=self.stream_interval,
        )

    def conversation_id(self, context: RequestContext) -> str:
        return conversation_id(context)

    async def person(self, run: RunSlot[AnswerSlot]) -> Person:
        owner = str(run.schedule.place.context.get("user_id") or "")
        return await reach.person(run.inner.client, owner)

    async def tell(self, run: RunSlot[AnswerSlot], text: str, audience: Audience) -> None:
        """To the owner in their DM with the app; to the admins (``SLACK_ADMIN_USERS``), else
        where the schedule posts."""
        client, metadata = run.inner.client, run.schedule.place.context
        if audience == "owner":
            await reach.tell(client, str(metadata.get("user_id") or ""), text)
            return
        for admin in self.admins:
            await reach.tell(client, admin, text)
        if not self.admins:  # no admin configured: say it where the schedule posts
            thread = str(metadata.get("thread_id") or "") or None
            await reach.tell(client, str(metadata["channel_id"]), text, thread_ts=thread)

    # --- a removed schedule's notice ----------------------------------------------------------

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
