"""Schedules in the Teams bot (``bots.schedules``): the schedule commands a turn carries, and
the turns the dispatcher makes of due occurrences. ``TeamsWing`` asks here first.

- **Commands** (``/schedule ...`` typed in a chat or a channel, a mention "@Threadline every
  Monday 9am: ...", the Pause, Confirm and Remove buttons) are answered without the model:
  the asker is resolved as for a question, their time zone is the one their Teams client
  reports with the activity (``localTimezone``), and the schedule's place is the
  conversation (its reference is kept with the schedule: proactive messages need no
  request).
- **A scheduled turn** asks ``ScheduleRunner.prepare`` what to do (the owner again: the
  conversation's roster first, then the agent's resolver and groups), posts the marker
  ("Scheduled by @ana · every weekday 9:00", with Pause) as a proactive message, and hands
  the turn host an ``Answering`` as the owner. A proactive post the Bot Connector refuses
  for good (403: the bot was removed or blocked; 404: the conversation is gone) pauses the
  schedule and the owner is told once, in a 1:1 chat; when the owner is gone, the
  conversation is told (Teams has no admin inbox the bot can reach by id).
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
from adapters.teams.slot import AnswerSlot, PostedMessage
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.removed import RemovedNotice
from agent_core.schedules.runs import Audience
from agent_core.state.turns import Turn
from bots.places import told_privately
from bots.schedules.checks import ChannelChecks, owner_context
from bots.schedules.service import BotSchedules
from bots.teams.kinds import TeamsAsked
from bots.teams.outbound import Outbound
from bots.turns import Answering, Outcome, Stop

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

    # --- commands -----------------------------------------------------------------------------

    async def command(self, turn: Turn, asked: TeamsAsked, slot: AnswerSlot) -> Outcome | None:
        """Answer ``asked`` when its text is a schedule command (None otherwise)."""
        command = parse_command(asked.text)
        if command is None:
            return None
        activity = asked.activity.wire()
        context = request_context(activity)
        zone = activity.get("localTimezone")
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
    def place(activity: Mapping[str, Any]) -> Place:
        """Where a schedule made by ``activity`` posts: its conversation (a channel's thread,
        a group chat, the asker's 1:1 chat), with the reference proactive messages need."""
        return Place(
            thread_key=turn_key(activity),
            stop_owner=asker_id(activity) or None,
            context=dict(request_context(activity).metadata),
            reference=ConversationRef.from_activity(activity).to_record(),
        )

    # --- scheduled turns ----------------------------------------------------------------------

    async def slot(self, turn: Turn, occurrence: Occurrence) -> AnswerSlot | None:
        """Where a scheduled run posts (what an earlier run of it posted); None when the
        schedule is gone (logged)."""
        schedule = await self.schedules.store.get(occurrence.schedule_id)
        if schedule is None or not schedule.place.reference:
            log.info("teams: schedule %s is gone; its run %s is dropped", *_ids(turn, occurrence))
            return None
        ref = ConversationRef.from_record(schedule.place.reference)
        connector = await self.outbound.connector(ref.service_url)

        async def posted(message: PostedMessage) -> None:
            await turn.record(**message.as_progress())

        previous = PostedMessage.from_progress(turn.progress)
        return AnswerSlot(connector, ref, posted=previous, on_posted=posted)

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

    async def answer(
        self, turn: Turn, occurrence: Occurrence, slot: AnswerSlot, stop: Stop
    ) -> Answering | Outcome:
        """What a scheduled turn does: nothing posted (an alert that did not fire, a paused
        schedule), or the owner's question answered after its marker."""
        runner = self.schedules.runner
        schedule = await self.schedules.store.get(occurrence.schedule_id)
        if schedule is None:
            return "dropped"
        ref = ConversationRef.from_record(schedule.place.reference)
        connector = await self.outbound.connector(ref.service_url)
        checks = self._checks(ref, schedule)
        step = await runner.prepare(turn, occurrence, checks)
        if isinstance(step, str):
            await runner.finished(turn, occurrence, step)
            return "completed"
        alone = self.privately is not None and await self.privately(schedule.place.context)
        if not alone and not turn.progress.get(MARKER):  # a shared place gets no marker
            try:
                marker = await reach.post(connector, ref, step.marker_component())
            except ConnectorError as error:
                gone = reach.place_gone(error)
                await runner.not_posted(
                    turn, occurrence, schedule, checks, failure=str(error), gone=gone
                )
                return "dropped"
            await turn.record(**{MARKER: marker})
        reply = TeamsReplyStream(
            connector,
            ref,
            options=self.options,
            on_stop=stop,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
        )
        context = owner_context(schedule, turn_id=turn.id)
        return Answering(
            context,
            step.prompt,
            reply,
            conversation_id=conversation_id(context),
            done=runner.on_answered(turn, occurrence, schedule),
            # a place now read by another organisation: the answer (and why) to the owner
            shown_first=[told_privately()] if alone else (),
            audience="asker" if alone else "place",
        )

    def _checks(self, ref: ConversationRef, schedule: Schedule) -> ChannelChecks:
        metadata = schedule.place.context

        async def person(schedule: Schedule) -> Person:
            connector = await self.outbound.connector(ref.service_url)
            member = str(metadata.get("teams_user_id") or metadata.get("user_id") or "")
            return await reach.person(connector, ref.conversation_id, member)

        async def notify(schedule: Schedule, text: str, audience: Audience) -> None:
            connector = await self.outbound.connector(ref.service_url)
            await reach.tell(connector, ref, text, personal=audience == "owner")

        return ChannelChecks(self.schedules.access, person, notify)


def _ids(turn: Turn, occurrence: Occurrence) -> tuple[str, str]:
    return occurrence.schedule_id, turn.id
