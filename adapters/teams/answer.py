"""Teams' streaming protocol for one answer in a personal chat, paced, with fallbacks.

The writer sends, in order: informative updates (the blue progress line) until text exists,
then streaming chunks that each carry the full text so far with a growing
``streamSequence``, then the final message. Sends are at least ``pace`` seconds apart and each
starts only after the previous one answered; updates that arrive meanwhile are coalesced.

Fallbacks, as Teams requires:

* the first informative update is refused (403: streaming not allowed here) -> the answer is
  posted as a message and **updated in place**;
* the stream has run ``max_duration`` (Teams allows 2 minutes) -> it is closed with the text so
  far and the rest continues as in-place updates of that message;
* a 403 on a stream that was running means the user pressed **Stop** -> ``on_stop`` is called
  (the host cancels the turn) and nothing more is sent;
* 403 ``ConversationBlockedByUser`` -> ``on_stop`` too: nobody can read the answer.

``on_posted`` hears of the message that carries the answer as soon as it exists (the stream,
or the message updated in place), so a host can record it before sending more.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from adapters.teams import activities
from adapters.teams.activities import Activity, ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.slot import MessageKind, OnPosted, PostedMessage

logger = logging.getLogger(__name__)

Mode = Literal["idle", "streaming", "in_place", "stopped"]
DEFAULT_INFORMATIVE = "Working on it…"


class AnswerStream:
    """Streams one answer into a personal chat; see the module docstring.

    ``clock`` and ``sleep`` are injectable so tests can check the pacing without waiting.

    >>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"}, "t",
    ...                       "personal")
    >>> AnswerStream(connector=None, ref=ref, pace=1.0).mode  # type: ignore[arg-type]
    'idle'
    """

    def __init__(
        self,
        connector: TeamsConnector,
        ref: ConversationRef,
        *,
        pace: float = 1.0,
        max_duration: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_stop: Callable[[str], None] | None = None,
        on_posted: OnPosted | None = None,
    ) -> None:
        self._connector = connector
        self._ref = ref
        self._pace = pace
        self._max_duration = max_duration
        self._clock = clock
        self._sleep = sleep
        self._on_stop = on_stop
        self._on_posted = on_posted
        self.mode: Mode = "idle"
        self.stream_id: str | None = None
        self.message_id: str | None = None
        self._sequence = 0
        self._started_at = 0.0
        self._last_sent: float | None = None
        self._status: str | None = None
        self._sent_status: str | None = None
        self._text = ""
        self._sent_text = ""
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    @property
    def shown_text(self) -> str:
        """The answer text the asker has seen so far (streamed or posted)."""
        return self._sent_text

    # ------------------------------------------------------------------ inputs

    def set_status(self, line: str) -> None:
        """A progress line; shown as an informative update until the answer text starts."""
        self._status = line
        self._kick()

    def set_text(self, text: str) -> None:
        """The answer text so far (each call carries all of it).

        Teams refuses a chunk that does not extend what was already streamed (403, which
        would read as the user's Stop), so a text that does not - the first message's part
        shrinks to a paragraph boundary once a long answer is split - is not streamed; the
        final message carries it.
        """
        if not text.startswith(self._sent_text):
            return
        self._text = text
        self._kick()

    @property
    def stopped(self) -> bool:
        return self.mode == "stopped"

    def _kick(self) -> None:
        if self._task is None and not self._closing:
            self._task = asyncio.create_task(self._pump(), name="teams-stream")
        self._wake.set()

    # ------------------------------------------------------------------ pump

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._closing or self.stopped:
                return
            await self._wait_for_pace()
            if self._closing or self.stopped:
                return
            await self._send_update()

    async def _wait_for_pace(self) -> None:
        if self._last_sent is None:
            return
        remaining = self._last_sent + self._pace - self._clock()
        if remaining > 0:
            await self._sleep(remaining)

    async def _send_update(self) -> None:
        if self.mode == "streaming" and self._clock() - self._started_at >= self._max_duration:
            await self._close_stream_early()
            return
        if self._text and self._text != self._sent_text:
            # Text streams at the first paced send, with no hold for a preamble as Slack's
            # answer has (adapters.slack.answer): Teams paces every send 1 s apart anyway (its
            # rule), and a preamble streamed here is replaced in place by the final message,
            # never deleted (a Slack message taken back costs two calls and vanishes).
            if self.mode == "idle":
                await self._informative(self._status or DEFAULT_INFORMATIVE)
                self._wake.set()  # the text goes out on the next round, after the pace
            elif self.mode == "streaming":
                await self._chunk(self._text)
            elif self.mode == "in_place":
                await self._in_place(activities.message(self._ref, self._text))
        elif self._status and self._status != self._sent_status and not self._sent_text:
            if self.mode in ("idle", "streaming"):
                await self._informative(self._status)

    # ------------------------------------------------------------------ sends

    async def _posted(self, message_id: str | None, kind: MessageKind) -> None:
        if message_id and self._on_posted is not None:
            await self._on_posted(PostedMessage(message_id, kind))

    async def _reply(self, activity: Mapping[str, Any]) -> str | None:
        try:
            return await self._connector.reply(
                self._ref.conversation_id, self._ref.activity_id or "", activity
            )
        finally:
            self._last_sent = self._clock()

    async def _informative(self, line: str) -> None:
        self._sequence += 1
        activity = activities.stream_informative(self._ref, line, self._sequence, self.stream_id)
        try:
            new_id = await self._reply(activity)
        except ConnectorError as error:
            self._failed(error, first=self.stream_id is None)
            return
        if self.stream_id is None:
            self.stream_id = new_id
            self._started_at = self._clock()
            self.mode = "streaming"
            await self._posted(new_id, "stream")
        self._sent_status = line

    async def _chunk(self, text: str) -> None:
        assert self.stream_id is not None
        self._sequence += 1
        activity = activities.stream_chunk(self._ref, self.stream_id, text, self._sequence)
        try:
            await self._reply(activity)
        except ConnectorError as error:
            self._failed(error, first=False)
            return
        self._sent_text = text

    async def _in_place(self, activity: Activity) -> None:
        try:
            if self.message_id is None:
                self.message_id = await self._reply(activity)
                await self._posted(self.message_id, "message")
            else:
                await self._connector.update(self._ref.conversation_id, self.message_id, activity)
                self._last_sent = self._clock()
        except ConnectorError as error:
            self._failed(error, first=False)
            return
        self._sent_text = activity.get("text", "")

    async def _close_stream_early(self) -> None:
        """The stream reached Teams' time limit: close it with the text so far and continue
        by updating that message."""
        assert self.stream_id is not None
        text = self._sent_text or self._text or DEFAULT_INFORMATIVE
        final = activities.stream_final(
            self._ref, self.stream_id, activities.message(self._ref, text)
        )
        logger.info(
            "teams stream %s hit %.0fs; updating in place", self.stream_id, self._max_duration
        )
        try:
            await self._reply(final)
        except ConnectorError as error:
            self._failed(error, first=False)
            return
        self.mode, self.message_id, self._sent_text = "in_place", self.stream_id, text
        await self._posted(self.message_id, "message")
        self._wake.set()

    def _failed(self, error: ConnectorError, *, first: bool) -> None:
        if error.blocked:
            self._stop("blocked")
        elif error.status == 403 and (first or "exceed" in error.message.lower()):
            logger.info("teams streaming refused (%s); updating in place", error)
            self.mode = "in_place"
            self._wake.set()
        elif error.status == 403:
            self._stop("stopped by user")
        else:
            logger.warning("teams stream update failed: %s", error)

    def _stop(self, reason: str) -> None:
        self.mode = "stopped"
        if self._on_stop is not None:
            self._on_stop(reason)

    # ------------------------------------------------------------------ close

    async def close(self, final: Activity) -> str | None:
        """Stop updating and send ``final``: as the stream's closing message, an in-place
        update, or a new message. Returns the answer message's id."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self.stopped:
            return None
        await self._wait_for_pace()
        try:
            if self.mode == "streaming" and self.stream_id is not None:
                await self._reply(activities.stream_final(self._ref, self.stream_id, final))
                return self.stream_id
            if self.mode == "in_place" and self.message_id is not None:
                await self._connector.update(self._ref.conversation_id, self.message_id, final)
                return self.message_id
            answer_id = await self._reply(final)
            await self._posted(answer_id, "message")
            return answer_id
        except ConnectorError as error:
            self._failed(error, first=False)
            logger.error("teams final message failed: %s", error)
            return None

    async def aclose(self) -> None:
        """Cancel a pending update (the turn was cancelled)."""
        self._closing = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
