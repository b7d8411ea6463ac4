"""``AnswerStream``: one answer's markdown, streamed into the thread in few Web API calls.

Deltas are batched: text goes out when ``flush_chars`` have piled up or ``flush_interval``
after the first unsent delta, so a 3,000-character answer generated at once costs
``chat.startStream`` + ``chat.appendStream`` + ``chat.stopStream``. The final call carries
``final_blocks`` (the feedback buttons). A message holds at most ``max_message_chars`` of
markdown; longer answers continue in a new message.

When streaming is refused (``message_not_in_streaming_state`` after the stream expired, or a
workspace where the streaming methods are unavailable) or fails on Slack's side (a 5xx, an
error page that is not JSON: ``adapters.slack.errors``) the answer continues as
``chat.postMessage`` + ``chat.update`` of the same text, so nobody loses an answer.
An answer taken back before anything was sent (a preamble to tool calls) costs no call.
``before_first_send`` runs just before the answer's first call (the reply stream ends the
plan's stream there: one stream at a time in a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.elements import markdown_blocks
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.limits import MAX_MARKDOWN_TOTAL, MAX_TEXT_FALLBACK
from adapters.slack.markdown import truncate
from adapters.text import split_text

log = logging.getLogger(__name__)

STREAM_REFUSED = frozenset(
    {
        "message_not_in_streaming_state",
        "unknown_method",
        "not_allowed",
        "not_allowed_token_type",
        "method_deprecated",
        "invalid_arguments",
        "feature_not_enabled",
        "streaming_not_supported",
    }
)


def falls_back(error: SlackCallFailed) -> bool:
    """Streaming refused, or failed on Slack's side: carry on without it."""
    failure = error.failure
    return failure.code in STREAM_REFUSED or failure.server_fault


class AnswerStream:
    """Streams markdown into one thread; see the module docstring.

    >>> client = AsyncWebClient(token="xoxb-test")
    >>> stream = AnswerStream(client, channel="C1", thread_ts="1.0", team_id="T1", user_id="U1")
    >>> stream.started, stream.text
    (False, '')
    """

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread_ts: str,
        team_id: str,
        user_id: str,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
        max_message_chars: int = MAX_MARKDOWN_TOTAL - 500,
        on_post: Callable[[str], Awaitable[None]] | None = None,
        before_first_send: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._client = web_client(client)
        self._channel = channel
        self._thread_ts = thread_ts
        self._team_id = team_id
        self._user_id = user_id
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self.max_message_chars = max_message_chars
        self._on_post = on_post
        self._before_first_send = before_first_send
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._buffer = ""
        self._stream: AsyncChatStream | None = None
        self._ts: str | None = None  # the message being written
        self._message_text = ""  # markdown already in that message
        self.fallback = False
        self.finished = False
        self.posted: list[str] = []  # every message ts this answer created
        self.text = ""  # everything appended so far

    @property
    def started(self) -> bool:
        return self._ts is not None

    # --- public API -------------------------------------------------------------------------

    async def append(self, delta: str) -> None:
        """Add text; it is sent when enough has piled up or the flush interval passes."""
        if not delta or self.finished:
            return
        self._buffer += delta
        self.text += delta
        if len(self._buffer) >= self.flush_chars:
            self._cancel_timer()
            async with self._lock:
                await self._write(self._take())
        elif self._timer is None and self.flush_interval > 0:
            self._timer = asyncio.create_task(self._flush_later())

    async def finish(self, final_blocks: Sequence[dict[str, Any]] = ()) -> str | None:
        """Send the rest with ``final_blocks``; returns the ts of the answer's last message."""
        if self.finished:
            return self._ts
        self._cancel_timer()
        async with self._lock:
            self.finished = True
            if not self.text and not self.started:
                return None
            await self._write(self._take(), final_blocks=list(final_blocks))
        return self._ts

    async def discard(self) -> None:
        """Take the answer back: drop unsent text, delete what was already posted."""
        self._cancel_timer()
        async with self._lock:
            self.finished = True
            self._buffer = ""
            if self._stream is not None and not self.fallback:
                with contextlib.suppress(SlackCallFailed):
                    await self._stream.stop()
            for ts in self.posted:
                with contextlib.suppress(SlackCallFailed):
                    await self._client.chat_delete(channel=self._channel, ts=ts)
            self.posted.clear()

    # --- batching -----------------------------------------------------------------------------

    def _take(self) -> str:
        text, self._buffer = self._buffer, ""
        return text

    def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.flush_interval)
        self._timer = None
        async with self._lock:
            if not self.finished and self._buffer:
                await self._write(self._take())

    async def _write(self, text: str, *, final_blocks: list[dict[str, Any]] | None = None) -> None:
        """Send ``text``, rolling over to a new message whenever one would overflow."""
        while len(self._message_text) + len(text) > self.max_message_chars:
            room = self.max_message_chars - len(self._message_text)
            head = split_text(text, room)[0] if room >= 200 else ""
            await self._close_message(final_blocks=None, text=head)
            text = text[len(head) :]
        if final_blocks is not None:
            await self._close_message(final_blocks=final_blocks, text=text)
        elif text:
            await self._send(text)

    # --- Web API ------------------------------------------------------------------------------

    async def _record(self, ts: str) -> None:
        self._ts = ts
        self.posted.append(ts)
        if self._on_post is not None:
            await self._on_post(ts)

    async def _first_send(self) -> None:
        """Called once, just before the answer's first Web API call (an answer taken back
        before anything was sent never calls it)."""
        hook, self._before_first_send = self._before_first_send, None
        if hook is not None:
            await hook()

    async def _send(self, text: str) -> None:
        await self._first_send()
        if self.fallback:
            await self._post_or_update(self._message_text + text)
            self._message_text += text
            return
        try:
            if self._stream is None:
                self._stream = await self._client.chat_stream(
                    channel=self._channel,
                    thread_ts=self._thread_ts,
                    recipient_team_id=self._team_id,
                    recipient_user_id=self._user_id,
                    buffer_size=1,
                )
            await self._stream.append(markdown_text=text)
        except SlackCallFailed as error:
            await self._refused(error, text)
            return
        if self._ts is None and self._stream.ts:
            await self._record(self._stream.ts)
        self._message_text += text

    async def _refused(self, error: SlackCallFailed, text: str) -> None:
        """Streaming failed: carry on with ``chat.postMessage`` / ``chat.update``."""
        if not falls_back(error):
            raise error
        log.info("slack: streaming failed (%s); answering with chat.update", error.failure)
        self.fallback = True
        self._stream = None
        await self._post_or_update(self._message_text + text)
        self._message_text += text

    async def _post_or_update(
        self, markdown: str, extra_blocks: Sequence[dict[str, Any]] = ()
    ) -> None:
        blocks = [*markdown_blocks(markdown), *extra_blocks]
        fallback_text = truncate(markdown, MAX_TEXT_FALLBACK) or " "
        if self._ts is None:
            await self._first_send()
            response = await self._client.chat_postMessage(
                channel=self._channel, thread_ts=self._thread_ts, text=fallback_text, blocks=blocks
            )
            await self._record(str(response["ts"]))
        else:
            await self._client.chat_update(
                channel=self._channel, ts=self._ts, text=fallback_text, blocks=blocks
            )

    async def _close_message(
        self, *, final_blocks: list[dict[str, Any]] | None, text: str = ""
    ) -> None:
        """End the current message with ``text`` (the last one also gets ``final_blocks``)."""
        blocks = final_blocks or []
        if self._stream is not None and self._ts is not None and not self.fallback:
            try:
                await self._stream.stop(markdown_text=text or None, blocks=blocks or None)
            except SlackCallFailed as error:
                if not falls_back(error):
                    raise
                self.fallback = True
                await self._post_or_update(self._message_text + text, blocks)
        elif text or blocks:
            await self._post_or_update(self._message_text + text, blocks)
        self._message_text += text
        if final_blocks is None:
            self._ts, self._stream, self._message_text = None, None, ""
