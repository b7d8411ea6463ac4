"""The Slack wing of the turn host (``bots.turns``): what a listener records, and how a
recorded turn is answered.

A listener (``bots.slack.bot``) turns a verified delivery into a ``SlackAsked`` and
``accept``-s it, as a ``Question`` (``bots.turn_kinds``), before Slack gets its ack.
``SlackWing`` answers it on whichever process's worker picks it up (``bots.turns.TurnHost``
does the rest, as for every channel)::

    SlackAsked -> AnswerSlot (what an earlier run posted) -> RequestContext
               -> SlackReplyStream (each message it posts is recorded on the turn at once,
                  through the slot)

- **Order**: turns of one thread run one at a time (``adapters.slack.context.turn_key``).
- **Re-run after a crash** (``turn.attempt > 1``): the slot deletes what the dead run posted,
  then the question is answered again, so the thread ends with one answer. A private answer
  (ephemeral messages cannot be deleted) is not repeated: the asker is told plainly that
  it was interrupted.
- **Public slash commands** first post "<@user> asked: ..." and answer in that message's
  thread (which the bot joins); in a channel shared with another organisation whose answer
  is not the place's, the thread opens with the place's one line instead of the question.
- **The thread's context**: what the thread said before the question that the conversation
  lacks (other apps' messages, a human thread the bot was just called into) is read within
  Slack's limits and given to the agent with the question (``adapters.slack.history``).
- **"Show query"**: the answer's queries are kept for its button (``adapters.slack.sources``).
- **Kinds** (``bots.turn_kinds``): each turn kind has its route (``question``,
  ``resumed``, ``step``, ``scheduled``, ``removed``), which the host picks by the kind.
- **Approvals**: an approval the reply posts is noted where it went (``on_approval``); a
  decided one is continued by a turn of its own (``resumed_turn``: a ``ResumedApproval``
  whose ``where`` is the question's place) in the same thread, on any process.
- **Schedules**: a schedule command (a question's, asked first), a scheduled run and a
  removed schedule's line are answered by ``bots.slack.schedules``.
- **Shared places**: in a channel shared with another organisation (``adapters.slack.places``)
  the answer goes to the asker alone, is refused, or is posted, as ``bots.places`` says; the
  thread reads one line saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self

from pydantic import TypeAdapter, ValidationError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.fetch import FetchPolicy
from adapters.files import SharedFile
from adapters.notices import SHARED_PRIVATELY, SHARED_REFUSED
from adapters.slack.context import (
    PRIVATE_THREAD,
    ReplyTarget,
    conversation_id,
)
from adapters.slack.files import download
from adapters.slack.history import ThreadContext, ThreadView, thread_prompt
from adapters.slack.places import SlackPlaces
from adapters.slack.slot import AnswerSlot, PostedMessages
from adapters.slack.sources import QueryRecords
from adapters.slack.stream import OnApproval, SlackReplyStream
from adapters.slack.threads import ThreadMembership
from agent_core.components import NotificationComponent, SourcesComponent, UiComponent
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.state.turns import Turn
from agent_core.turn.resuming import Resume
from bots.approvals import ResumedTurn
from bots.files import SharedFiles
from bots.places import PlacePolicy
from bots.slack.clients import WorkspaceClients
from bots.slack.kinds import SlackAsked, SlackKind
from bots.slack.workflow import StepSlot, StepTurn, WorkflowSteps
from bots.turn_kinds import Occurrence, RemovedNotice, ResumedApproval
from bots.turns import Answering, Audience, Outcome, Route, Slot, Stop

if TYPE_CHECKING:
    from agent_core.approvals.record import ApprovalRecord
    from bots.slack.schedules import SlackSchedules

log = logging.getLogger(__name__)


class SlackWing:
    """How the Slack bot answers a recorded turn; see the module docstring.

    >>> from adapters.slack.history import HistoryGate
    >>> from adapters.slack.threads import ThreadTranscript
    >>> from agent_core.state import MemoryKeyValueStore
    >>> from bots.slack.clients import build_client
    >>> from bots.slack.settings import SlackSettings
    >>> settings = SlackSettings(bot_token="xoxb-1", signing_secret="s")
    >>> clients = WorkspaceClients(settings, build_client(settings, "xoxb-1"))
    >>> cache = MemoryKeyValueStore()
    >>> context = ThreadContext(ThreadTranscript(cache), HistoryGate(cache))
    >>> SlackWing(clients, ThreadMembership(cache), context).platform
    'slack'
    """

    platform = "slack"
    kinds: TypeAdapter[SlackKind] = TypeAdapter(SlackKind)

    def __init__(
        self,
        clients: WorkspaceClients,
        threads: ThreadMembership,
        thread_context: ThreadContext,
        *,
        queries: QueryRecords | None = None,
        on_approval: OnApproval | None = None,
        stop_button_after: float | None = 3.0,
        flush_chars: int = 1000,
        stream_interval: float = 1.0,
        schedules: SlackSchedules | None = None,
        places: SlackPlaces | None = None,
        place_policy: PlacePolicy | None = None,
        steps: WorkflowSteps | None = None,
    ) -> None:
        self.clients = clients
        self.places = places
        """Whether a channel is shared with another organisation (None: never asked)."""
        self.place_policy = place_policy or PlacePolicy()
        self.steps = steps
        """Workflow Builder steps' turns (``bots.slack.workflow``), asked first."""
        self.schedules = schedules
        """Schedule commands and scheduled turns (``bots.slack.schedules``), asked first."""
        self.threads = threads
        self.thread_context = thread_context
        self.queries = queries
        self.on_approval = on_approval
        self.stop_button_after = stop_button_after
        self.flush_chars = flush_chars
        self.stream_interval = stream_interval

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The wing as one running turn uses it: its clients (their installations),
        places, thread memberships and thread context read (and the transcript marked) as
        the turn's (``for_turn``)."""
        view = turn_view(self, writes, "clients")
        view = turn_view(view, writes, "places")
        view = turn_view(view, writes, "threads")
        return turn_view(view, writes, "thread_context")

    # --- the route of each kind ----------------------------------------------------------

    def question(self, asked: SlackAsked) -> Route:
        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await self._question(turn, asked, _answer_slot(slot))

        return Route(lambda turn: self._slot(turn, asked), answer)

    def resumed(self, approval: ResumedApproval[SlackAsked]) -> Route:
        where = approval.where

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await self._resumed(turn, where, approval.approval_id, _answer_slot(slot))

        return Route(lambda turn: self._slot(turn, where), answer)

    def step(self, step: StepTurn) -> Route | None:
        steps = self.steps
        if steps is None:
            return None

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            assert isinstance(slot, StepSlot)
            return steps.answer(step, slot) or "completed"

        return Route(lambda turn: steps.slot(turn, step), answer)

    def scheduled(self, run: Occurrence) -> Route | None:
        return None if self.schedules is None else self.schedules.run.route(run)

    def removed(self, notice: RemovedNotice) -> Route | None:
        schedules = self.schedules
        if schedules is None:
            return None

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await schedules.tell_removed(notice, _answer_slot(slot))

        return Route(lambda turn: schedules.notice_slot(turn, notice), answer)

    # --- a question, and a resumed approval ---------------------------------------------

    async def _slot(self, turn: Turn, queued: SlackAsked) -> AnswerSlot | None:
        """The turn's slot (what earlier runs posted) on its workspace's client; None for a
        workspace that is gone (logged)."""
        enterprise = queued.context.get("slack_enterprise_id")
        try:
            client = await self.clients.client_for(
                queued.team, enterprise, enterprise_install=queued.enterprise_install
            )
        except AgentError as error:
            log.info("slack: dropped turn %s of workspace %s (%s)", turn.id, queued.team, error)
            return None

        async def posted(messages: PostedMessages) -> None:
            await turn.record(**messages.as_progress())

        previous = PostedMessages.from_progress(turn.progress)
        target = queued.target(thread_ts=previous.thread_ts, turn_id=turn.id)
        return AnswerSlot(client, target, posted=previous, on_posted=posted)

    async def _question(
        self, turn: Turn, queued: SlackAsked, slot: AnswerSlot
    ) -> Answering | Outcome:
        """A question: a schedule command answered, else the agent asked, with what the
        thread said before it and the files shared with it."""
        if turn.is_retry and not await slot.recover():
            return "interrupted"  # part of a private answer reached the asker: told so
        if done := await self._command(turn, queued, slot):
            return done
        answering = await self._answering(turn, queued, slot)
        if isinstance(answering, str) or answering.audience == "nobody":
            return answering
        client = slot.client
        view = await self._thread_view(queued, client, slot.target)
        shown_first = list(answering.shown_first) if answering.audience == "asker" else []
        if (notice := view.notice) is not None:  # the asker learns what it could not see
            shown_first.append(UiComponent.of(NotificationComponent(message=notice), notice))
        question = thread_prompt(
            view.messages, queued.text, bot_user_id=queued.bot_user_id, notice=view.notice
        )

        async def fetch(file: SharedFile, store: SharedFiles | None) -> bytes:
            limit, policy = (store.max_bytes, store.policy) if store else (0, FetchPolicy())
            return await download(client, file, max_bytes=limit, policy=policy)

        return replace(
            answering,
            question=question,
            conversation_id=conversation_id(answering.context),
            files=queued.files,
            fetch=fetch,
            shown_first=shown_first,
        )

    async def _resumed(
        self, turn: Turn, where: SlackAsked, approval_id: str, slot: AnswerSlot
    ) -> Answering | Outcome:
        """A decided approval's turn, continued in the place it was asked in."""
        if turn.is_retry and not await slot.recover():
            return "interrupted"
        answering = await self._answering(turn, where, slot)
        if isinstance(answering, str) or answering.audience == "nobody":
            return answering
        # the thread and the files were read when it was asked
        return replace(answering, question=Resume(approval_id), shown_first=())

    async def _answering(
        self, turn: Turn, queued: SlackAsked, slot: AnswerSlot
    ) -> Answering | Outcome:
        """Where every answer of a question's place streams, and who reads it (the place's
        one line in ``shown_first``); "dropped" when a slash command's thread cannot open."""
        client = slot.client
        audience = await self._audience(queued, client, slot.target)
        told = await self._open_thread(queued, slot, audience)
        if told is None:
            return "dropped"
        context = queued.request_context(slot.target, turn.id)
        if audience == "asker":  # its memories stay the asker's too
            context = context.model_copy(
                update={"metadata": {**context.metadata, "is_private": True}}
            )
        reply = SlackReplyStream(
            client,
            slot.target,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            flush_chars=self.flush_chars,
            flush_interval=self.stream_interval,
            on_approval=self.on_approval,
        )

        async def keep(component: UiComponent) -> None:
            await self._keep_queries(slot.target, component)

        return Answering(context, "", reply, shown_first=told, keep=keep, audience=audience)

    async def _command(self, turn: Turn, queued: SlackAsked, slot: AnswerSlot) -> Outcome | None:
        """A schedule command answered, else None (the homes it changed are refreshed by
        ``bots.slack.home``, told by the schedule commands)."""
        if self.schedules is None:
            return None
        return await self.schedules.command(turn, queued, slot) or None

    async def _audience(
        self, queued: SlackAsked, client: AsyncWebClient, target: ReplyTarget
    ) -> Audience:
        """Who reads this answer: the place, or (a channel shared with another organisation,
        as the policy says) the asker alone or nobody. A private answer is the asker's
        already."""
        # a public slash command's target is private only until its thread opens
        if self.places is None or (target.private and not queued.open_thread) or target.is_dm:
            return "place"
        shared = await self.places.is_shared(
            client,
            queued.team,
            target.channel,
            envelope=bool(queued.context.get("slack_ext_shared")),
        )
        if not shared:
            return "place"
        match self.place_policy.for_place(queued.context):
            case "allow":
                return "place"
            case "refuse":
                return "nobody"
        return "asker"

    async def _open_thread(
        self, queued: SlackAsked, slot: AnswerSlot, audience: Audience
    ) -> list[UiComponent] | None:
        """What the place is told first when the answer is not its own (its one line), once
        a public slash command's thread is open (which the bot joins). Where another
        organisation reads the channel, that thread opens with the line, never the question,
        and the line is not said twice. ``None``: the thread could not be opened."""
        line = SHARED_PRIVATELY if audience == "asker" else SHARED_REFUSED
        if not queued.open_thread:
            return [_notice(line)]
        instead = None if audience == "place" else line
        command = str(queued.context.get("command") or "/ask")
        thread_ts = await slot.open_thread(queued.text, command=command, instead=instead)
        if thread_ts is None:
            return None
        await self.threads.join(queued.team, slot.target.channel, thread_ts)
        return [_notice(line)] if instead is None else []

    async def _keep_queries(self, target: ReplyTarget, component: UiComponent) -> None:
        """The answer's queries, kept for its "Show query" button (``adapters.slack.sources``)."""
        sources = component.rich_component
        if self.queries is None or not isinstance(sources, SourcesComponent) or target.private:
            return
        try:
            await self.queries.save(
                target.team_id, target.channel, target.thread_ts, target.turn_id or "", sources
            )
        except StateUnavailableError as error:  # the answer matters more than the button
            log.warning("slack: queries of turn %s not kept (%s)", target.turn_id, error)

    async def _thread_view(
        self, queued: SlackAsked, client: AsyncWebClient, target: ReplyTarget
    ) -> ThreadView:
        """What the thread said before the question that the conversation lacks: what
        other apps posted since the last turn, and the thread itself on a first mention
        (read from Slack once, within its limits)."""
        before_ts = queued.history_before_ts or queued.message_ts
        if before_ts is None:
            return ThreadView([])
        try:
            return await self.thread_context.before(
                client,
                team=queued.team,
                channel=target.channel,
                thread_ts=target.thread_ts,
                before_ts=before_ts,
                joins=queued.history_before_ts is not None,
            )
        except StateUnavailableError as error:  # answer the question without them
            log.warning("slack: thread context of %s not read (%s)", target.thread_ts, error)
            return ThreadView([])


def _answer_slot(slot: Slot) -> AnswerSlot:
    assert isinstance(slot, AnswerSlot), "the slot of a thread's turn"
    return slot


def _notice(text: str) -> UiComponent:
    """One line everyone in the place reads."""
    return UiComponent.of(NotificationComponent(message=text, level="info"), text)


async def resumed_turn(record: ApprovalRecord, hints: Mapping[str, Any]) -> ResumedTurn | None:
    """The turn that continues a decided approval asked in Slack, in the same thread (a
    private answer's, through the deciding click's ``response_url`` when it has one); None
    for an approval asked elsewhere.

    >>> from agent_core.approvals import ApprovalRecord
    >>> record = ApprovalRecord.example(request={"platform": "slack", "workspace_id": "T1",
    ...     "channel_id": "C1", "thread_id": "1.0", "user_id": "U1", "turn_id": "t0"})
    >>> import asyncio
    >>> turn = asyncio.run(resumed_turn(record, {}))
    >>> turn.key, turn.owner, turn.kind.approval_id
    ('slack:T1:C1:1.0', 'T1:U1', 'a1')
    """
    request = record.request
    if request.get("platform") != "slack":
        return None
    try:
        queued = SlackAsked(
            context=request,  # validated as ChannelMetadata
            text="",
            private=request.get("thread_id") == PRIVATE_THREAD,
            response_url=hints.get("response_url"),
            enterprise_install=bool(request.get("slack_enterprise_install")),
        )
    except ValidationError:
        log.error("slack: approval %s cannot be resumed (its request is unreadable)", record.id)
        return None
    resumed: ResumedApproval[SlackAsked] = ResumedApproval(approval_id=record.id, where=queued)
    return ResumedTurn(queued.turn_key, resumed, queued.owner)
