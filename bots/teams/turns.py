"""The Teams wing of the turn host (``bots.turns``): how a recorded activity is answered.

The bot (``bots.teams.bot``) records each message as a turn, a ``Question`` whose
``TeamsAsked`` carries the activity model checked at ingress and what it asks
(``bots.turn_kinds``), before Teams gets its ``201``; ``TeamsWing`` answers it on whichever
process's worker picks it up, through the conversation reference saved in the turn and a
connector that needs no inbound request (``bots.teams.outbound``)::

    activity -> AnswerSlot (the message an earlier run posted) -> RequestContext
             -> TeamsReplyStream (the message that carries the answer is recorded on the
                turn as soon as it exists, through the slot)

- **Order**: turns of one conversation *and* asker run one at a time
  (``adapters.teams.context.turn_key``).
- **Re-run after a crash**: the answer goes *into* the message the dead run posted (the
  stream is closed with it, a card is updated), so nothing is posted twice.
- **Stop**: Teams' own Stop on a stream (403) ends the turn on the process streaming it
  (``stop``, given by the host); the Stop button of a group chat's progress card reaches
  any process through ``request_stop``.
- **Feedback**: the message that carried the answer is remembered with its turn, so
  feedback on it reaches the memories that turn made.
- **Approvals**: an approval card the reply posts is noted where it went
  (``on_approval``); a decided one is continued by a turn of its own (``resumed_turn``: a
  ``ResumedApproval`` whose ``TeamsWhere`` is the conversation and the asker's context),
  which replies in the same conversation without streaming (no message of the asker's to
  stream under), on any process.
- **Schedules**: a schedule command (a question's, asked first), a scheduled run and a
  removed schedule's line are answered by ``bots.teams.schedules``.
- **Shared places**: in a conversation read by another organisation
  (``adapters.teams.places``) the answer goes to the asker alone, is refused, or is posted,
  as ``bots.places`` says; the conversation reads one line saying so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self

from pydantic import TypeAdapter

from adapters.fetch import Fetcher, FetchPolicy
from adapters.files import SharedFile
from adapters.notices import SHARED_PRIVATELY, SHARED_REFUSED
from adapters.teams.activities import ConversationRef
from adapters.teams.context import conversation_id, request_context
from adapters.teams.files import FileOffers, download, shared_files
from adapters.teams.places import TeamsPlaces
from adapters.teams.slot import AnswerSlot, PostedMessage
from adapters.teams.stream import OnApproval, ReplyOptions, SignInCards, TeamsReplyStream
from agent_core.components import NotificationComponent, UiComponent
from agent_core.errors import StateUnavailableError
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.state.turns import Turn
from agent_core.turn.resuming import Resume
from agent_core.users import RequestContext
from bots.approvals import ResumedTurn
from bots.files import SharedFiles
from bots.places import PlacePolicy
from bots.teams.kinds import TeamsAsked, TeamsKind, TeamsWhere
from bots.teams.outbound import Outbound
from bots.turn_kinds import Occurrence, RemovedNotice, ResumedApproval
from bots.turns import Answering, Audience, Outcome, Route, Slot, Stop

if TYPE_CHECKING:
    from agent_core.approvals.record import ApprovalRecord
    from bots.teams.home import TeamsHome
    from bots.teams.schedules import TeamsSchedules

log = logging.getLogger(__name__)


class TeamsWing:
    """How the Teams bot answers a recorded turn; see the module docstring.

    >>> from types import SimpleNamespace
    >>> TeamsWing(SimpleNamespace(), options=ReplyOptions()).platform  # type: ignore[arg-type]
    'teams'
    """

    platform = "teams"
    kinds: TypeAdapter[TeamsKind] = TypeAdapter(TeamsKind)

    def __init__(
        self,
        outbound: Outbound,
        *,
        options: ReplyOptions,
        files: FileOffers | None = None,
        stop_button_after: float | None = 3.0,
        on_approval: OnApproval | None = None,
        schedules: TeamsSchedules | None = None,
        places: TeamsPlaces | None = None,
        place_policy: PlacePolicy | None = None,
        home: TeamsHome | None = None,
        sign_in_cards: SignInCards | None = None,
    ) -> None:
        self.outbound = outbound
        self.sign_in_cards = sign_in_cards
        """Single sign-on's OAuthCards (``bots.teams.sso``), when configured."""
        self.places = places
        """Whether a conversation is read by another organisation (None: never asked)."""
        self.place_policy = place_policy or PlacePolicy()
        self.options = options
        self.files = files
        self.stop_button_after = stop_button_after
        self.on_approval = on_approval
        self.schedules = schedules
        """Schedule commands and scheduled turns (``bots.teams.schedules``), asked first."""
        self.home = home
        """``/home`` (``bots.teams.home``), asked before the agent."""

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The wing as one running turn uses it: its places read as the turn's
        (``for_turn``)."""
        return turn_view(self, writes, "places")

    # --- the route of each kind ----------------------------------------------------------

    def question(self, asked: TeamsAsked) -> Route:
        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await self._question(turn, asked, _answer_slot(slot), stop)

        return Route(lambda turn: self._question_slot(turn, asked), answer)

    def resumed(self, approval: ResumedApproval[TeamsWhere]) -> Route:
        where = approval.where

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await self._resume(turn, _answer_slot(slot), where, approval.approval_id, stop)

        return Route(lambda turn: self._resumed_slot(turn, where.reference), answer)

    def step(self, step: Any) -> None:
        return None  # Teams has no workflow steps (its kinds have none)

    def scheduled(self, run: Occurrence) -> Route | None:
        return None if self.schedules is None else self.schedules.run.route(run)

    def removed(self, notice: RemovedNotice) -> Route | None:
        schedules = self.schedules
        if schedules is None:
            return None

        async def answer(turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await schedules.tell_removed(notice, _answer_slot(slot))

        return Route(lambda turn: schedules.notice_slot(turn, notice), answer)

    # --- a question ---------------------------------------------------------------------

    async def _question_slot(self, turn: Turn, asked: TeamsAsked) -> AnswerSlot:
        """The message the answer goes into (what an earlier run posted, if any), on the
        connector of the conversation's service URL. A conversation this process has not
        saved the reference of has it saved beside the reply, not before it: the turn
        records its first message only once the reference is saved (a run that dies before
        is run again, and saves it then)."""
        ref = ConversationRef.from_activity(asked.activity)
        connector = await self.outbound.connector(ref.service_url)
        saved = None if self.outbound.remembers(ref) else asyncio.ensure_future(self._save(ref))
        previous = PostedMessage.from_progress(turn.progress)
        return AnswerSlot(connector, ref, posted=previous, on_posted=_recorder(turn, saved))

    async def _save(self, ref: ConversationRef) -> None:
        try:
            await self.outbound.remember(ref)
        except StateUnavailableError as error:
            log.warning("teams: conversation reference not saved (%s)", error)

    async def _question(
        self, turn: Turn, asked: TeamsAsked, slot: AnswerSlot, stop: Stop
    ) -> Answering | Outcome:
        """A schedule or home command answered, else the agent asked (with the files the
        message shares)."""
        if self.schedules is not None:
            if (handled := await self.schedules.command(turn, asked, slot)) is not None:
                return handled
        if self.home is not None and (shown := await self.home.command(turn, asked, slot)):
            return shown
        ref = ConversationRef.from_activity(asked.activity)
        context = request_context(asked.activity)
        context.metadata["turn_id"] = turn.id
        audience = await self._audience(context)
        if audience == "asker":  # its memories stay the asker's too
            context.metadata["is_private"] = True
        reply = TeamsReplyStream(
            await self.outbound.connector(ref.service_url),
            ref,
            options=self.options,
            on_stop=stop,  # Teams' Stop on the stream (or the bot blocked): the turn ends
            files=self.files,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            on_approval=self.on_approval,
            sign_in_cards=self.sign_in_cards,
        )

        async def fetch(file: SharedFile, store: SharedFiles | None) -> bytes:
            limit, policy = (store.max_bytes, store.policy) if store else (0, FetchPolicy())
            async with Fetcher(policy) as fetcher:  # never the Bot Connector's session
                return await download(fetcher, file, max_bytes=limit)

        async def done(outcome: Outcome) -> None:
            if outcome == "completed" and slot.current is not None:
                await self._remember_answer(ref, slot.current.id, turn.id)

        if audience == "nobody":
            return Answering(context, "", reply, shown_first=_told("nobody"), audience="nobody")
        return Answering(
            context,
            asked.text,
            reply,
            conversation_id=conversation_id(context),
            files=shared_files(asked.activity.wire()),
            fetch=fetch,
            done=done,
            shown_first=_told(audience),
            audience=audience,
        )

    async def _audience(self, context: RequestContext) -> Audience:
        """Who reads this answer: the conversation, or (one read by another organisation,
        as the policy says) the asker alone or nobody."""
        if self.places is None or not await self.places.is_shared(context.metadata):
            return "place"
        match self.place_policy.for_place(context.metadata):
            case "allow":
                return "place"
            case "refuse":
                return "nobody"
        return "asker"

    # --- a resumed approval -------------------------------------------------------------

    async def _resumed_slot(self, turn: Turn, ref: ConversationRef) -> AnswerSlot:
        connector = await self.outbound.connector(ref.service_url)
        previous = PostedMessage.from_progress(turn.progress)
        return AnswerSlot(connector, ref, posted=previous, on_posted=_recorder(turn))

    async def _resume(
        self, turn: Turn, slot: AnswerSlot, where: TeamsWhere, approval_id: str, stop: Stop
    ) -> Answering:
        """The turn that continues a decided approval (``resumed_turn``)."""
        ref = where.reference
        reply = TeamsReplyStream(
            await self.outbound.connector(ref.service_url),
            ref,
            options=replace(self.options, stream=False, say_when_empty=False),
            on_stop=stop,
            files=self.files,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            on_approval=self.on_approval,
            sign_in_cards=self.sign_in_cards,
        )
        context = RequestContext(metadata={**where.context, "turn_id": turn.id})
        audience = await self._audience(context)
        if audience == "nobody":  # the place became shared while it waited: the asker only
            audience = "asker"
        return Answering(context, Resume(approval_id), reply, audience=audience)

    async def _remember_answer(self, ref: ConversationRef, message_id: str, turn_id: str) -> None:
        try:
            await self.outbound.remember_answer(ref, message_id, turn_id)
        except StateUnavailableError as error:  # feedback on it then rates no memories
            log.warning("teams: could not note the answer of turn %s (%s)", turn_id, error)


def _told(audience: Audience) -> list[UiComponent]:
    """The one line a shared place reads (nothing for an ordinary one)."""
    if audience == "place":
        return []
    text = SHARED_PRIVATELY if audience == "asker" else SHARED_REFUSED
    return [UiComponent.of(NotificationComponent(message=text, level="info"), text)]


def _recorder(
    turn: Turn, after: Awaitable[None] | None = None
) -> Callable[[PostedMessage], Awaitable[None]]:
    """Records on ``turn`` the message its slot posted, as soon as it exists (once
    ``after`` is done)."""

    async def posted(message: PostedMessage) -> None:
        if after is not None:
            await asyncio.shield(after)  # a stopped turn still saves it
        await turn.record(**message.as_progress())

    return posted


def _answer_slot(slot: Slot) -> AnswerSlot:
    assert isinstance(slot, AnswerSlot), "the slot of a conversation's turn"
    return slot


async def resumed_turn(
    outbound: Outbound, record: ApprovalRecord, hints: Mapping[str, Any]
) -> ResumedTurn | None:
    """The turn that continues a decided approval asked in Teams: in the conversation its
    card was posted in (else the conversation's saved reference), ordered with the asker's
    other turns there; None for an approval asked elsewhere, or in a conversation no
    reference is kept of (logged)."""
    request = record.request
    if request.get("platform") != "teams":
        return None
    where = record.message or {}
    conversation = where.get("conversation")
    if isinstance(conversation, Mapping):
        ref = ConversationRef.from_record(conversation)
    else:
        tenant, chat = str(request.get("workspace_id")), str(request.get("thread_id"))
        found = await outbound.reference(tenant, chat)
        if found is None:
            log.error("teams: approval %s cannot be resumed (no conversation kept)", record.id)
            return None
        ref = found
    asker = str(request.get("user_id") or "")
    reply_to = where.get("activity_id")
    place = TeamsWhere(ref=ref.to_record(), reply_to=reply_to, context=dict(request))
    resumed: ResumedApproval[TeamsWhere] = ResumedApproval(approval_id=record.id, where=place)
    return ResumedTurn(f"{ref.thread_key}|{asker}", resumed, asker)
