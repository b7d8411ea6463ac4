"""Schedules in the Teams bot (``bots.schedules``): the schedule commands a turn carries, and
the turns the dispatcher makes of due occurrences. ``TeamsWing`` asks here first.

- **Commands** (``/schedule ...`` typed in a chat or a channel, a mention "@Threadline every
  Monday 9am: ...", the Pause, Confirm and Remove buttons) are answered without the model:
  the asker is resolved as for a question, their time zone is the one their Teams client
  reports with the activity (``localTimezone``), and the schedule's place is the
  conversation (its reference is kept with the schedule: proactive messages need no
  request).
- **A scheduled run** is ``bots.schedules.run`` (the same for every channel); this is its
  Teams ``RunChannel``: the marker ("Scheduled by @ana · every weekday 9:00", with Pause)
  as a proactive message, once; a proactive post the Bot Connector refuses for good (403:
  the bot was removed or blocked; 404: the conversation is gone) is a place gone (the
  schedule pauses, its owner is told once, in a 1:1 chat; when the owner is gone, the
  conversation is told: Teams has no admin inbox the bot can reach by id).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.reach import Person
from adapters.teams import reach
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError
from adapters.teams.context import asker_id, conversation_id, request_context, turn_key
from adapters.teams.payloads import Activity
from adapters.teams.slot import AnswerSlot, PostedMessage
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from agent_core.channel import ChannelMetadata
from agent_core.components import UiComponent
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.removed import RemovedNotice
from agent_core.schedules.runs import Audience
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.schedules.run import MarkerRefused, RunSlot, ScheduledRun
from bots.schedules.service import BotSchedules
from bots.teams.kinds import TeamsAsked
from bots.teams.outbound import Outbound
from bots.turns import Outcome, Stop

Privately = Callable[[Mapping[str, Any]], Awaitable[bool]]
"""Whether a schedule's place (its metadata) is read by another organisation now, so the
run's answer goes to its owner alone (``bots.teams.bot``: ``TeamsPlaces`` + the policy)."""

log = logging.getLogger(__name__)

MARKER = "marker_id"
"""The turn's record of the marker it posted (a re-run posts no second one)."""


class TeamsSchedules:
    """See the module docstring.

    >>> from types import SimpleNamespace
    >>> TeamsSchedules(SimpleNamespace(), SimpleNamespace(),  # type: ignore[arg-type]
    ...                options=ReplyOptions()).stop_button_after
    3.0
    """

    platform = "teams"

    def __init__(
        self,
        schedules: BotSchedules,
        outbound: Outbound,
        *,
        options: ReplyOptions,
        stop_button_after: float | None = 3.0,
        privately: Privately | None = None,
    ) -> None:
        self.schedules = schedules
        self.outbound = outbound
        self.privately = privately
        self.options = options
        self.stop_button_after = stop_button_after
        self.run: ScheduledRun[AnswerSlot] = ScheduledRun(schedules, self)
        """A scheduled run (``bots.schedules.run``), through this channel."""

    # --- commands -----------------------------------------------------------------------------

    async def command(self, turn: Turn, asked: TeamsAsked, slot: AnswerSlot) -> Outcome | None:
        """Answer ``asked`` when its text is a schedule command (None otherwise)."""
        command = parse_command(asked.text)
        if command is None:
            return None
        activity = asked.activity
        context = request_context(activity)
        zone = (activity.model_extra or {}).get("localTimezone")
        reply = await self.schedules.command(
            command,
            context,
            place=self.place(activity),
            workspace=f"teams:{context.metadata['workspace_id']}",
            timezone=zone if isinstance(zone, str) else None,
            turn_id=turn.id,
        )
        ref = ConversationRef.from_activity(activity)
        connector = await self.outbound.connector(ref.service_url)
        async with TeamsReplyStream(connector, ref, options=self.options, slot=slot) as stream:
            await stream.handle(reply)
            await stream.finish()
        await turn.record_at_end(answered=True)
        return "completed"

    @staticmethod
    def place(activity: Activity) -> Place:
        """Where a schedule made by ``activity`` posts: its conversation (a channel's thread,
        a group chat, the asker's 1:1 chat), with the reference proactive messages need."""
        wire = activity.wire()
        return Place(
            thread_key=turn_key(wire),
            stop_owner=asker_id(wire) or None,
            context=dict(request_context(activity).metadata),
            reference=ConversationRef.from_activity(activity).to_record(),
        )

    # --- scheduled runs (``bots.schedules.run``: this is Teams' ``RunChannel``) ------------

    async def slot(self, turn: Turn, schedule: Schedule) -> AnswerSlot | None:
        """Where a scheduled run posts (what an earlier run of it posted); None when the
        schedule has no conversation to post in (logged)."""
        if not schedule.place.reference:
            log.info("teams: schedule %s has no place; its run %s is dropped", schedule.id, turn.id)
            return None
        ref = ConversationRef.from_record(schedule.place.reference)
        connector = await self.outbound.connector(ref.service_url)

        async def posted(message: PostedMessage) -> None:
            await turn.record(**message.as_progress())

        previous = PostedMessage.from_progress(turn.progress)
        return AnswerSlot(connector, ref, posted=previous, on_posted=posted)

    async def alone(self, run: RunSlot[AnswerSlot]) -> bool:
        return self.privately is not None and await self.privately(run.schedule.place.context)

    async def post_marker(
        self, turn: Turn, run: RunSlot[AnswerSlot], marker: UiComponent, *, alone: bool
    ) -> ChannelMetadata:
        """The marker as a proactive message of its own (once: the turn records it); a
        place now shared gets none. The answer goes into the conversation itself."""
        if alone or turn.progress.get(MARKER):
            return {}
        ref = _ref(run)
        try:
            posted = await reach.post(await self.outbound.connector(ref.service_url), ref, marker)
        except ConnectorError as error:
            raise MarkerRefused(str(error), reach.place_gone(error)) from error
        await turn.record(**{MARKER: posted})
        return {}

    async def reply(self, turn: Turn, run: RunSlot[AnswerSlot], stop: Stop) -> TeamsReplyStream:
        ref = _ref(run)
        return TeamsReplyStream(
            await self.outbound.connector(ref.service_url),
            ref,
            options=self.options,
            on_stop=stop,
            slot=run.inner,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
        )

    def conversation_id(self, context: RequestContext) -> str:
        return conversation_id(context)

    async def person(self, run: RunSlot[AnswerSlot]) -> Person:
        ref, metadata = _ref(run), run.schedule.place.context
        connector = await self.outbound.connector(ref.service_url)
        member = str(metadata.get("teams_user_id") or metadata.get("user_id") or "")
        return await reach.person(connector, ref.conversation_id, member)

    async def tell(self, run: RunSlot[AnswerSlot], text: str, audience: Audience) -> None:
        """To the owner in a 1:1 chat; else the conversation (Teams has no admin inbox the
        bot can reach by id)."""
        ref = _ref(run)
        connector = await self.outbound.connector(ref.service_url)
        await reach.tell(connector, ref, text, personal=audience == "owner")

    # --- a removed schedule's notice ----------------------------------------------------------

    async def notice_slot(self, turn: Turn, notice: RemovedNotice) -> AnswerSlot | None:
        """Where a removed schedule's line goes (``agent_core.schedules.removed``)."""
        if not notice.reference:
            log.info("teams: schedule %s's removal not told (no place)", notice.schedule_id)
            return None
        ref = ConversationRef.from_record(notice.reference)
        return AnswerSlot(await self.outbound.connector(ref.service_url), ref)

    async def tell_removed(self, notice: RemovedNotice, slot: AnswerSlot) -> Outcome:
        """Post a removed schedule's one line into its conversation."""
        ref = ConversationRef.from_record(notice.reference)
        connector = await self.outbound.connector(ref.service_url)
        return "completed" if await reach.tell(connector, ref, notice.text) else "dropped"


def _ref(run: RunSlot[AnswerSlot]) -> ConversationRef:
    """The conversation a schedule posts in (its kept reference)."""
    return ConversationRef.from_record(run.schedule.place.reference)
