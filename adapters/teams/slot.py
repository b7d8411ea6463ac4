"""The message that carries one turn's answer, wherever it was posted and by whichever run.

A turn's answer lives in one Teams message: the stream a personal chat answer starts, the
"Working on it" card with a Stop button in a group chat, or the first message of the answer.
A message the state could not record (Redis was down: ``unrecorded``) is recorded again by
``record_again`` once it is back, so the run that follows an outage answers in it.
``AnswerSlot`` remembers it (``on_posted`` lets the host record it durably as soon as it
exists), puts the answer into it in place (``fill``), or settles it with a short text
(``settle``: one of ``adapters.notices``). A later run of the same turn, after its process
died, starts from the recorded ``PostedMessage`` and so updates that message instead of
posting a second answer::

    slot = AnswerSlot(connector, ref, posted=PostedMessage.from_progress(turn.progress),
                      on_posted=lambda message: turn.record(**message.as_progress()))
    await slot.fill(activities.message(ref, "The answer."))
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from adapters.teams import activities
from adapters.teams.activities import Activity, ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.controls import stop_card

logger = logging.getLogger(__name__)

MessageKind = Literal["stream", "message"]


@dataclass(frozen=True, slots=True)
class PostedMessage:
    """A message a turn posted: a ``stream`` (closed by a final streaming message) or a plain
    ``message`` (updated in place).

    >>> PostedMessage("1700000000001", "stream").as_progress()
    {'answer_id': '1700000000001', 'answer_kind': 'stream'}
    >>> PostedMessage.from_progress({"answer_id": "9", "answer_kind": "message"})
    PostedMessage(id='9', kind='message')
    >>> PostedMessage.from_progress({}) is None
    True
    """

    id: str
    kind: MessageKind

    def as_progress(self) -> dict[str, Any]:
        return {"answer_id": self.id, "answer_kind": self.kind}

    @classmethod
    def from_progress(cls, progress: Mapping[str, Any]) -> PostedMessage | None:
        answer_id, kind = progress.get("answer_id"), progress.get("answer_kind")
        if not isinstance(answer_id, str) or not answer_id or kind not in ("stream", "message"):
            return None
        return cls(answer_id, "stream" if kind == "stream" else "message")


OnPosted = Callable[[PostedMessage], Awaitable[None]]


class AnswerSlot:
    """Where the answer of one turn goes; see the module docstring.

    >>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"}, "t",
    ...                       "groupChat")
    >>> slot = AnswerSlot(None, ref, posted=PostedMessage("7", "message"))  # type: ignore[arg-type]
    >>> slot.current, slot.resumed
    (PostedMessage(id='7', kind='message'), True)
    """

    def __init__(
        self,
        connector: TeamsConnector,
        ref: ConversationRef,
        *,
        posted: PostedMessage | None = None,
        on_posted: OnPosted | None = None,
    ) -> None:
        self._connector = connector
        self._ref = ref
        self._current = posted
        self._on_posted = on_posted
        self.resumed = posted is not None
        """True when an earlier run of the turn had posted this message."""
        self.unrecorded = False
        """True when ``on_posted`` failed for the current message (``record_again``)."""

    @property
    def current(self) -> PostedMessage | None:
        return self._current

    async def posted(self, message: PostedMessage) -> None:
        """Note the message carrying the answer (and tell ``on_posted``, which must not fail
        the answer: a lost record only costs a duplicate after a crash)."""
        if message == self._current:
            return
        self._current = message
        await self._record(message)

    async def _record(self, message: PostedMessage) -> None:
        if self._on_posted is None:
            return
        try:
            await self._on_posted(message)
        except Exception as error:  # the durable record is best effort, the answer is not
            self.unrecorded = True
            logger.warning("could not record the posted answer %s: %s", message.id, error)
        else:
            self.unrecorded = False

    async def record_again(self) -> bool:
        """Record the current message, after ``on_posted`` failed; True once it is recorded
        (or there was nothing to record)."""
        if self.unrecorded and self._current is not None:
            await self._record(self._current)
        return not self.unrecorded

    async def _reply(self, activity: Activity) -> str:
        return await self._connector.reply(
            self._ref.conversation_id, self._ref.activity_id or "", activity
        )

    async def _in_place(self, target: PostedMessage, activity: Activity) -> None:
        if target.kind == "stream":
            await self._reply(activities.stream_final(self._ref, target.id, activity))
        else:
            await self._connector.update(self._ref.conversation_id, target.id, activity)

    async def fill(self, activity: Activity) -> str:
        """Put ``activity`` (the answer's first message) into the slot, or post it when the
        slot is empty or cannot be updated any more; the id of the message that carries it."""
        target = self._current
        if target is not None:
            try:
                await self._in_place(target, activity)
                if target.kind == "stream":  # closed: from now on a plain message
                    await self.posted(PostedMessage(target.id, "message"))
                return target.id
            except ConnectorError as error:
                if error.blocked:
                    raise
                logger.warning("could not answer in place of %s (%s); posting", target.id, error)
        message_id = await self._reply(activity)
        await self.posted(PostedMessage(message_id, "message"))
        return message_id

    async def show_progress(self, turn_id: str | None) -> None:
        """Post the "Working on it" card (with a Stop button for ``turn_id``) if nothing
        carries the answer yet."""
        if self._current is not None:
            return
        card = activities.message(self._ref, attachments=[stop_card(turn_id)])
        await self.posted(PostedMessage(await self._reply(card), "message"))

    async def settle(
        self,
        text: str,
        *,
        post_if_empty: bool = True,
        attachments: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """End the slot with ``text`` (stopped, interrupted) and ``attachments`` (the plan):
        in place when something was posted, else as a new reply (unless ``post_if_empty``
        is False). Never raises."""
        message = activities.message(self._ref, text, attachments=attachments)
        try:
            if self._current is not None:
                await self._in_place(self._current, message)
            elif post_if_empty:
                await self.posted(PostedMessage(await self._reply(message), "message"))
        except ConnectorError as error:
            logger.warning("could not settle the answer with %r: %s", text, error)
