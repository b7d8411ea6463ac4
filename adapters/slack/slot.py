"""What one turn posted in its thread, so that a later run of the turn can take it back.

A turn's answer in Slack is several messages in one thread (the streamed answer, tables,
charts, the Stop button) and, for admin-only detail, ephemeral messages only the asker sees.
``AnswerSlot`` remembers them: the reply stream reports each message it posts (``posted``,
``posted_privately``) and ``on_posted`` lets the bot record the ``PostedMessages`` on the turn
at once. A later run of the same turn, after its process died, starts from that record::

    slot = AnswerSlot(client, target, posted=PostedMessages.from_progress(turn.progress),
                      on_posted=lambda posted: turn.record(**posted.as_progress()))
    if turn.is_retry and not await slot.recover():   # told the asker it was interrupted
        return
    async with SlackReplyStream(client, slot.target, slot=slot) as reply: ...
    # the turn cannot be answered (it kept dying): await slot.settle(notices.INTERRUPTED)

``recover`` deletes what the dead run posted (so the thread ends with one answer) unless part
of it already reached the asker privately: ephemeral messages cannot be taken back, so the
asker is told plainly instead. A post the state could not record (Redis was down:
``unrecorded``) is recorded again by ``record_again`` once it is back, so the re-run that
follows an outage takes back the partial answer and the notice posted during it. A public
slash command first opens its thread
(``open_thread``: "<@user> asked: ..."), a scheduled run posts its marker first
(``open_marked``); the thread is part of the record, so a re-run answers in the same thread.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.notices import INTERRUPTED
from adapters.slack.context import PRIVATE_THREAD, ReplyTarget
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.escape import escape
from adapters.slack.markdown import truncate
from adapters.slack.private import PrivateDelivery
from adapters.slack.render import render
from agent_core.components import NotificationComponent, UiComponent

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PostedMessages:
    """What a turn posted: the thread a slash command opened, the ``ts`` of the messages it
    posted there (oldest first), and whether anything went to the asker privately.

    >>> PostedMessages(ts=("1.1", "1.2")).as_progress()
    {'reply_ts': '1.1', 'posted': ['1.1', '1.2']}
    >>> PostedMessages.from_progress({"posted": ["1.1"], "private_sent": True})
    PostedMessages(thread_ts=None, ts=('1.1',), private=True)
    >>> PostedMessages.from_progress({}) == PostedMessages()
    True
    """

    thread_ts: str | None = None
    ts: tuple[str, ...] = ()
    private: bool = False

    def merged(self, other: PostedMessages) -> PostedMessages:
        """Both records in one (what a run recorded, and what it could not).

        >>> PostedMessages(ts=("1.1",)).merged(PostedMessages(ts=("1.1", "1.2"))).ts
        ('1.1', '1.2')
        """
        return PostedMessages(
            thread_ts=self.thread_ts or other.thread_ts,
            ts=tuple(dict.fromkeys((*self.ts, *other.ts))),
            private=self.private or other.private,
        )

    def as_progress(self) -> dict[str, Any]:
        progress: dict[str, Any] = {}
        if self.thread_ts:
            progress["thread_ts"] = self.thread_ts
        if self.ts:
            progress.update(reply_ts=self.ts[0], posted=list(self.ts))
        if self.private:
            progress["private_sent"] = True
        return progress

    @classmethod
    def from_progress(cls, progress: Mapping[str, Any]) -> PostedMessages:
        thread = progress.get("thread_ts")
        return cls(
            thread_ts=str(thread) if thread else None,
            ts=tuple(str(ts) for ts in progress.get("posted") or []),
            private=bool(progress.get("private_sent")),
        )


OnPosted = Callable[[PostedMessages], Awaitable[None]]


def notice(text: str) -> UiComponent:
    """A plain warning message (interrupted, unavailable) as the channel renders it."""
    return UiComponent(rich_component=NotificationComponent(message=text, level="warning"))


class AnswerSlot:
    """Where the answer of one turn goes and what it posted; see the module docstring.

    >>> slot = AnswerSlot(AsyncWebClient(), ReplyTarget("C1", "1.0", "T1", "U1"),
    ...                   posted=PostedMessages(ts=("1.1",)))
    >>> slot.current.ts, slot.resumed
    (('1.1',), True)
    """

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        posted: PostedMessages | None = None,
        on_posted: OnPosted | None = None,
    ) -> None:
        self._client = web_client(client)
        self.target = target
        self._current = posted or PostedMessages()
        self._on_posted = on_posted
        self.resumed = bool(self._current.ts or self._current.private)
        """True when an earlier run of the turn had posted part of an answer."""
        self.unrecorded = False
        """True when ``on_posted`` failed for what is posted now (``record_again``)."""

    @property
    def current(self) -> PostedMessages:
        return self._current

    @property
    def client(self) -> AsyncWebClient:
        """The Web API client of the answer's workspace."""
        return self._client

    async def posted(self, ts: str) -> None:
        """Note a message the answer posted in the thread."""
        await self._note(replace(self._current, ts=(*self._current.ts, ts)))

    async def posted_privately(self) -> None:
        """Note that part of the answer went to the asker privately (it cannot be deleted)."""
        if not self._current.private:
            await self._note(replace(self._current, private=True))

    async def _note(self, posted: PostedMessages) -> None:
        """Keep ``posted`` and tell ``on_posted``, which must not fail the answer: a lost
        record only costs a duplicate after a crash."""
        self._current = posted
        if self._on_posted is not None:
            try:
                await self._on_posted(posted)
            except Exception as error:  # the durable record is best effort, the answer is not
                self.unrecorded = True
                log.warning("slack: could not record what the turn posted (%s)", error)
            else:
                self.unrecorded = False

    async def record_again(self) -> bool:
        """Record what is posted now, after ``on_posted`` failed; True once it is recorded
        (or there was nothing to record)."""
        if self.unrecorded and self._on_posted is not None:
            await self._note(self._current)
        return not self.unrecorded

    async def recover(self) -> bool:
        """A re-run: True to answer again, after deleting what the dead run posted; False
        when part of a private answer had reached the asker (it cannot be taken back): the
        asker is told that the answer was interrupted instead."""
        if self.target.private and self._current.private:
            await self._tell(INTERRUPTED)
            return False
        await self.retract()
        return True

    async def retract(self) -> None:
        """Delete the messages posted in the thread so far (ephemeral ones cannot be)."""
        for ts in self._current.ts:
            with contextlib.suppress(SlackCallFailed):
                await self._client.chat_delete(channel=self.target.channel, ts=ts)
        self._current = replace(self._current, ts=())

    async def settle(self, text: str) -> None:
        """End the turn with ``text`` (interrupted, unavailable) instead of an answer: what
        was posted is deleted and ``text`` is posted as a warning in its place (privately
        when the target is private). Never raises."""
        await self.retract()
        await self._tell(text)

    async def _tell(self, text: str) -> None:
        try:
            if self.target.private:
                await PrivateDelivery(self._client, self.target).deliver(notice(text))
                return
            for message in render(notice(text)):
                await self._client.chat_postMessage(
                    channel=self.target.channel,
                    thread_ts=self.target.thread_ts,
                    text=message.text,
                    blocks=message.blocks,
                )
        except SlackCallFailed as error:
            log.warning("slack: could not tell %s (%s)", self.target.user_id, error.failure)

    async def open_thread(
        self, question: str, *, command: str, instead: str | None = None
    ) -> str | None:
        """The thread a public slash command is answered in: "<@user> asked: ..." posted in
        the channel (once: the thread is recorded), or ``instead`` of the question (a channel
        shared with another organisation, whose people must not read it: its one line).
        ``None`` when the bot cannot post there; the asker is then told privately
        (``response_url``) how to ask instead."""
        if self._current.thread_ts:
            return self._current.thread_ts
        target = self.target
        opener = instead or f"<@{target.user_id}> asked: {escape(truncate(question, 2900))}"
        try:
            posted = await self._client.chat_postMessage(channel=target.channel, text=opener)
        except SlackCallFailed as error:
            log.info("slack: cannot post in %s (%s)", target.channel, error.failure)
            if target.response_url:
                await AsyncWebhookClient(target.response_url).send(
                    response_type="ephemeral",
                    text="I can't post in this conversation. Invite me with `/invite`, or ask "
                    f"privately: `{command} private {escape(question)}`",
                )
            return None
        thread_ts = str(posted["ts"])
        self.target = replace(target, thread_ts=thread_ts, private=False)
        await self._note(replace(self._current, thread_ts=thread_ts))
        return thread_ts

    async def open_marked(self, marker: UiComponent) -> str:
        """A scheduled run's first post: ``marker`` (what marks the answer as scheduled, with
        its Pause button) as a message of its own: in the channel, where it opens the
        answer's thread, or in the schedule's own thread. Once: the thread is recorded, and a
        re-run finds it. Raises ``SlackCallFailed`` (the caller asks ``reach.place_gone``)."""
        if self._current.thread_ts:
            return self._current.thread_ts
        target = self.target
        in_thread = target.thread_ts not in ("", PRIVATE_THREAD)
        message = render(marker)[0]
        posted = await self._client.chat_postMessage(
            channel=target.channel,
            thread_ts=target.thread_ts if in_thread else None,
            text=message.text,
            blocks=message.blocks,
        )
        thread_ts = target.thread_ts if in_thread else str(posted["ts"])
        self.target = replace(target, thread_ts=thread_ts, private=False)
        await self._note(replace(self._current, thread_ts=thread_ts))
        return thread_ts
