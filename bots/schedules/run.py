"""``ScheduledRun``: one scheduled run in a bot, written once for every channel; the channel
does only what its platform must (its ``RunChannel``: ``bots.slack.schedules``,
``bots.teams.schedules``).

    slot     the schedule, read once for the whole run, and where the run posts (the
             channel's slot); None, the run dropped, when the schedule or its place is gone
    answer   ``ScheduleRunner.prepare`` (the owner again, an alert's query): a run that posts
             nothing (an alert that did not fire, a paused schedule) keeps its outcome
             a place now read by another organisation (``RunChannel.alone``): no marker,
             the answer (and why) to the owner alone
             else the marker ("Scheduled by @ana · every weekday 9:00", with Pause) first;
             a channel that refuses it for good (the place is gone) pauses the schedule and
             its owner is told once (``MarkerRefused``)
             then the owner's question, answered as the owner by the turn host, whose end
             keeps the run's outcome (``ScheduleRunner.on_answered``)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from adapters.reach import Person
from adapters.stream import ReplyStream
from agent_core.channel import ChannelMetadata
from agent_core.components import UiComponent
from agent_core.errors import PlatformCallFailed
from agent_core.schedules.model import Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.runs import Audience
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.places import told_privately
from bots.schedules.checks import ChannelChecks, owner_context
from bots.schedules.service import BotSchedules
from bots.turns import Answering, Outcome, Posted, Route, Slot, Stop

log = logging.getLogger("threadline.schedules")

S = TypeVar("S", bound=Slot)


class MarkerRefused(PlatformCallFailed):
    """The channel refused a run's marker: ``failure`` as it said it; ``gone``, why the
    place is gone for good (None: it may work at the next run).

    >>> MarkerRefused("not_in_channel", "I am no longer in that channel").gone
    'I am no longer in that channel'
    """

    def __init__(self, failure: str, gone: str | None) -> None:
        super().__init__(failure)
        self.failure = failure
        self.gone = gone


@dataclass
class RunSlot(Generic[S]):
    """A scheduled run's slot: the channel's own (``inner``: what the turn host records and
    settles), with the occurrence and the schedule the run read."""

    inner: S
    occurrence: Occurrence
    schedule: Schedule

    @property
    def unrecorded(self) -> bool:
        return self.inner.unrecorded

    @unrecorded.setter
    def unrecorded(self, value: bool) -> None:
        self.inner.unrecorded = value

    @property
    def current(self) -> Posted | None:
        return self.inner.current

    async def record_again(self) -> bool:
        return await self.inner.record_again()

    async def settle(self, text: str) -> None:
        await self.inner.settle(text)


class RunChannel(Protocol[S]):
    """What only the channel does in a scheduled run."""

    platform: str

    async def slot(self, turn: Turn, schedule: Schedule) -> S | None:
        """Where the run posts (what an earlier run of it posted); None when the place
        cannot be reached (logged)."""
        ...

    async def alone(self, run: RunSlot[S]) -> bool:
        """Whether the place is read by another organisation now and the policy does not
        allow answering there: the answer goes to the owner alone."""
        ...

    async def post_marker(
        self, turn: Turn, run: RunSlot[S], marker: UiComponent, *, alone: bool
    ) -> ChannelMetadata:
        """Post ``marker`` before the answer (once: a re-run finds it; none when the answer
        goes to the owner ``alone``); what the run's context changes (where the answer
        goes; the turn it belongs to, when not the run's own). Raises ``MarkerRefused``."""
        ...

    async def reply(self, turn: Turn, run: RunSlot[S], stop: Stop) -> ReplyStream:
        """The stream the answer goes out on, where the slot points."""
        ...

    def conversation_id(self, context: RequestContext) -> str:
        """The conversation the run's answer belongs to."""
        ...

    async def person(self, run: RunSlot[S]) -> Person:
        """The schedule's owner as the platform sees them now."""
        ...

    async def tell(self, run: RunSlot[S], text: str, audience: Audience) -> None:
        """A notice about the schedule, to its owner or to the admins."""
        ...


class ScheduledRun(Generic[S]):
    """See the module docstring."""

    def __init__(self, schedules: BotSchedules, channel: RunChannel[S]) -> None:
        self.schedules = schedules
        self.channel = channel

    async def slot(self, turn: Turn, occurrence: Occurrence) -> RunSlot[S] | None:
        """The schedule (read here, once per run) and where its run posts; None when the
        schedule or its place is gone (logged)."""
        schedule = await self.schedules.store.get(occurrence.schedule_id)
        if schedule is None:
            log.info(
                "%s: schedule %s is gone; its run %s is dropped",
                self.channel.platform,
                occurrence.schedule_id,
                turn.id,
            )
            return None
        slot = await self.channel.slot(turn, schedule)
        return None if slot is None else RunSlot(slot, occurrence, schedule)

    def route(self, occurrence: Occurrence) -> Route:
        """The ``scheduled`` kind's route (``bots.turns``): the run's slot, then its answer."""

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            assert isinstance(slot, RunSlot)
            return await self.answer(turn, slot, stop)

        return Route(lambda turn: self.slot(turn, occurrence), answer)

    async def answer(self, turn: Turn, run: RunSlot[S], stop: Stop) -> Answering | Outcome:
        """What the run's turn does: nothing posted, or the owner's question answered after
        its marker (see the module docstring)."""
        runner, occurrence, schedule = self.schedules.runner, run.occurrence, run.schedule
        checks = self._checks(run)
        step = await runner.prepare(turn, occurrence, schedule, checks)
        if isinstance(step, str):
            await runner.finished(turn, occurrence, step, schedule)
            return "completed"
        alone = await self.channel.alone(run)
        try:
            where = await self.channel.post_marker(turn, run, step.marker_component(), alone=alone)
        except MarkerRefused as refused:
            await runner.not_posted(
                turn, occurrence, schedule, checks, failure=refused.failure, gone=refused.gone
            )
            return "dropped"
        where.setdefault("turn_id", turn.id)
        context = owner_context(schedule, **where)
        return Answering(
            context,
            step.prompt,
            await self.channel.reply(turn, run, stop),
            conversation_id=self.channel.conversation_id(context),
            done=runner.on_answered(turn, occurrence, schedule),
            shown_first=[told_privately()] if alone else (),
            audience="asker" if alone else "place",
        )

    def _checks(self, run: RunSlot[S]) -> ChannelChecks:
        channel = self.channel

        async def person(schedule: Schedule) -> Person:
            return await channel.person(run)

        async def notify(schedule: Schedule, text: str, audience: Audience) -> None:
            await channel.tell(run, text, audience)

        return ChannelChecks(self.schedules.access, person, notify)
