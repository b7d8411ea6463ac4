"""The Teams wing of the turn host (``bots.turns``): how a recorded activity is answered.

The bot (``bots.teams.bot``) records each message as a turn, ``{"activity": ..., "text":
...}``, before Teams gets its ``201``; ``TeamsWing`` answers it on whichever process's
worker picks it up, through the conversation reference saved in the turn and a connector
that needs no inbound request (``bots.teams.outbound``)::

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
  (``on_approval``); a decided one is continued by a turn of its own (``resumed_turn``:
  ``{"resume": id, "ref": ..., "context": ...}``), which replies in the same conversation
  without streaming (no message of the asker's to stream under), on any process.
- **Schedules**: a schedule command, and a turn the schedule dispatcher made, are answered
  by ``bots.teams.schedules`` (asked first).
- **Shared places**: in a conversation read by another organisation
  (``adapters.teams.places``) the answer goes to the asker alone, is refused, or is posted,
  as ``bots.places`` says; the conversation reads one line saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.fetch import Fetcher, FetchPolicy
from adapters.files import SharedFile
from adapters.notices import SHARED_PRIVATELY, SHARED_REFUSED
from adapters.teams.activities import ConversationRef
from adapters.teams.context import conversation_id, request_context
from adapters.teams.files import FileOffers, download, shared_files
from adapters.teams.payloads import MalformedPayload, read_activity
from adapters.teams.places import TeamsPlaces
from adapters.teams.slot import AnswerSlot, PostedMessage
from adapters.teams.stream import OnApproval, ReplyOptions, SignInCards, TeamsReplyStream
from agent_core.components import NotificationComponent, UiComponent
from agent_core.errors import StateUnavailableError
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.removed import RemovedNotice
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.approvals import ResumedTurn
from bots.files import SharedFiles
from bots.places import PlacePolicy
from bots.schedules.run import RunSlot
from bots.teams.outbound import Outbound
from bots.turns import Answering, Audience, Outcome, Slot, Stop

if TYPE_CHECKING:
    from agent_core.approvals.record import ApprovalRecord
    from bots.teams.home import TeamsHome
    from bots.teams.schedules import TeamsSchedules

log = logging.getLogger(__name__)


def turn_payload(activity: Mapping[str, Any], text: str) -> dict[str, Any]:
    """What the queue records for a message: the activity as Teams posted it, and what
    it asks.

    >>> turn_payload({"type": "message"}, "hi")
    {'activity': {'type': 'message'}, 'text': 'hi'}
    """
    return {"activity": dict(activity), "text": text}


class TeamsWing:
    """How the Teams bot answers a recorded turn; see the module docstring.

    >>> from types import SimpleNamespace
    >>> TeamsWing(SimpleNamespace(), options=ReplyOptions()).platform  # type: ignore[arg-type]
    'teams'
    """

    platform = "teams"

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

    async def slot(self, turn: Turn) -> AnswerSlot | RunSlot[AnswerSlot] | None:
        """The message the answer goes into (what an earlier run posted, if any), on the
        connector of the conversation's service URL; None for an unreadable turn (logged)."""
        if self.schedules is not None and (run := Occurrence.from_payload(turn.payload)):
            return await self.schedules.run.slot(turn, run)
        if self.schedules is not None and (notice := RemovedNotice.from_payload(turn.payload)):
            return await self.schedules.notice_slot(turn, notice)

        async def posted(message: PostedMessage) -> None:
            await turn.record(**message.as_progress())

        previous = PostedMessage.from_progress(turn.progress)
        resumed = _resumed_ref(turn)
        if resumed is not None:
            connector = await self.outbound.connector(resumed.service_url)
            return AnswerSlot(connector, resumed, posted=previous, on_posted=posted)
        activity = turn.payload.get("activity")
        try:
            read_activity(activity)
        except MalformedPayload as problem:
            log.error("teams: dropped turn %s with an unreadable activity (%s)", turn.id, problem)
            return None
        assert isinstance(activity, Mapping)
        ref = ConversationRef.from_activity(activity)
        connector = await self.outbound.connector(ref.service_url)
        try:
            await self.outbound.remember(ref)
        except StateUnavailableError as error:
            log.warning("teams: conversation reference not saved (%s)", error)
        return AnswerSlot(connector, ref, posted=previous, on_posted=posted)

    async def answer(self, turn: Turn, slot: Slot, stop: Stop) -> Answering | Outcome:
        if self.schedules is not None and isinstance(slot, RunSlot):
            return await self.schedules.run.answer(turn, slot, stop)
        assert isinstance(slot, AnswerSlot)
        if (resumed := _resumed_ref(turn)) is not None:
            return await self._resume(turn, slot, resumed, stop)
        if self.schedules is not None:
            if notice := RemovedNotice.from_payload(turn.payload):
                return await self.schedules.tell_removed(notice, slot)
            if (handled := await self.schedules.command(turn, slot)) is not None:
                return handled
        if self.home is not None and (shown := await self.home.command(turn, slot)):
            return shown
        activity: Mapping[str, Any] = turn.payload["activity"]
        ref = ConversationRef.from_activity(activity)
        context = request_context(activity)
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
            str(turn.payload.get("text") or ""),
            reply,
            conversation_id=conversation_id(context),
            files=shared_files(activity),
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

    async def _resume(
        self, turn: Turn, slot: AnswerSlot, ref: ConversationRef, stop: Stop
    ) -> Answering:
        """The turn that continues a decided approval (``resumed_turn``)."""
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
        context = RequestContext(metadata={**turn.payload["context"], "turn_id": turn.id})
        audience = await self._audience(context)
        if audience == "nobody":  # the place became shared while it waited: the asker only
            audience = "asker"
        resume = str(turn.payload["resume"])
        return Answering(context, "", reply, resume=resume, audience=audience)

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


def _resumed_ref(turn: Turn) -> ConversationRef | None:
    """Where a turn that continues an approval replies (None for any other turn)."""
    if "resume" not in turn.payload:
        return None
    ref = ConversationRef.from_record(turn.payload["ref"])
    return replace(ref, activity_id=turn.payload.get("reply_to"))


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
    payload = {
        "resume": record.id,
        "ref": ref.to_record(),
        "reply_to": where.get("activity_id"),
        "context": dict(request),
        "text": "",
    }
    return ResumedTurn(f"{ref.thread_key}|{asker}", payload, asker)
