"""Earlier messages of a thread, within Slack's limits on reading them.

Since 2025 Slack lets an app outside the Marketplace call ``conversations.replies`` about
once a minute per workspace, for at most 15 messages. So a thread is read from Slack only
when the bot joins it (its first mention there), and then at most ``HistoryGate.interval``
apart in each workspace, whichever process asks; a 429 pauses every process for its
``Retry-After``, and the turn is not held up waiting: it answers with what it can see and
says so. What the bot sees of the threads it follows comes from events
(``ThreadTranscript``), so a mention in a followed thread reads nothing::

    ThreadContext.before(...)   the transcript (one round trip)
        first mention here, never read  -> read_thread (HistoryGate first) -> the transcript
        -> ThreadView: what the conversation lacks, and whether some of it was out of sight

``thread_prompt`` puts the messages before the question, each attributed to its author:

>>> print(thread_prompt([{"user": "U1", "text": "DB is slow"}], "why?", bot_user_id="UB"))
Earlier messages in this Slack thread, oldest first:
<@U1>: DB is slow
<BLANKLINE>
My question: why?
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SlackCallFailed, SlackWebClient
from adapters.slack.markdown import truncate
from adapters.slack.threads import ThreadTranscript, ts_value
from agent_core.clock import SYSTEM_CLOCK
from agent_core.errors import StateUnavailableError
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

log = logging.getLogger(__name__)

MAX_MESSAGES = 15
"""Messages a read asks for: the most Slack gives an app outside the Marketplace."""
READ_INTERVAL = 60.0
"""Seconds between two reads in a workspace: Slack's pace for apps outside the Marketplace."""
MAX_CHARS = 6000
MAX_MESSAGE_CHARS = 1500
REPLIES = "conversations.replies"


class HistoryGate:
    """Whether a thread may be read now: at most one read per ``interval`` seconds in each
    workspace, and none while Slack's ``Retry-After`` runs, for every process sharing the
    ``cache``. With ``interval=0`` (a Marketplace app) only ``Retry-After`` pauses reads.
    While the cache cannot be asked, this process paces itself alone.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> gate = HistoryGate(MemoryKeyValueStore(), interval=60)
    >>> [asyncio.run(gate.claim("T1")) for _ in range(2)], asyncio.run(gate.claim("T2"))
    ([True, False], True)
    """

    def __init__(
        self,
        cache: KeyValueStore,
        *,
        interval: float = READ_INTERVAL,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._cache = cache
        self.interval = interval
        self._clock = clock
        self._local: dict[str, float] = {}  # key -> no read before (the cache is down)

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The gate as the running turn reads it (its cache's ``for_turn``)."""
        return turn_view(self, writes, "_cache")

    @staticmethod
    def _key(team: str, method: str) -> str:
        return f"slack:history:{team}:{method}"

    async def claim(self, team: str, method: str = REPLIES) -> bool:
        """True when this caller may read now (and holds the workspace's turn for
        ``interval``); False while another read or a ``Retry-After`` holds it."""
        key, now = self._key(team, method), self._clock()
        try:
            if self.interval > 0:
                return await self._cache.add(key, now + self.interval, ttl=self.interval)
            return await self._cache.get(key) is None
        except StateUnavailableError:
            if self._local.get(key, 0.0) > now:
                return False
            self._local[key] = now + self.interval
            return True

    async def pause(self, team: str, seconds: float, method: str = REPLIES) -> None:
        """Slack answered 429: no process reads for ``seconds``."""
        key, seconds = self._key(team, method), max(seconds, 1.0)
        self._local[key] = self._clock() + seconds
        try:
            await self._cache.set(key, self._clock() + seconds, ttl=seconds)
        except StateUnavailableError as error:
            log.info("slack: the pause of thread reads is kept in this process (%s)", error)


@dataclass(frozen=True)
class ThreadRead:
    """What one read of a thread returned: its messages before ``before_ts`` (oldest first),
    and whether the thread has more than Slack handed over or could not be read at all."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    read: bool = True
    has_more: bool = False


def without_rate_limit_retry(client: AsyncWebClient) -> AsyncWebClient:
    """``client`` minus its waits on ``Retry-After``: a turn that may not read a thread now
    answers without it rather than wait a minute (``HistoryGate`` holds everyone back)."""
    handlers = [
        h for h in client.retry_handlers if not isinstance(h, AsyncRateLimitErrorRetryHandler)
    ]
    return SlackWebClient(
        token=client.token,
        base_url=client.base_url,
        timeout=client.timeout,
        session=client.session,
        headers=client.headers,
        retry_handlers=handlers,
    )


async def read_thread(
    client: AsyncWebClient,
    gate: HistoryGate,
    *,
    team: str,
    channel: str,
    thread_ts: str,
    before_ts: str,
    limit: int = MAX_MESSAGES,
) -> ThreadRead:
    """The thread's messages before ``before_ts`` in one request of at most ``limit``
    messages, when ``gate`` lets it read now; ``read=False`` when it may not, or Slack
    refused (a 429 pauses the gate for its ``Retry-After``)."""
    if not await gate.claim(team):
        log.info("slack: thread %s not read now (Slack's pace for reading threads)", thread_ts)
        return ThreadRead(read=False)
    try:
        response = await without_rate_limit_retry(client).conversations_replies(
            channel=channel, ts=thread_ts, limit=limit, inclusive=True
        )
    except SlackCallFailed as error:
        if (wait := error.failure.retry_after) is not None:
            await gate.pause(team, wait)
        log.info("slack: no thread history for context (%s)", error.failure)
        return ThreadRead(read=False)
    messages = [
        dict(m)
        for m in response.get("messages") or []
        if isinstance(m, Mapping) and ts_value(m.get("ts")) < ts_value(before_ts)
    ]
    return ThreadRead(messages, has_more=bool(response.get("has_more")))


async def bot_in_thread(
    client: AsyncWebClient,
    gate: HistoryGate,
    *,
    team: str,
    channel: str,
    thread_ts: str,
    bot_user_id: str | None,
) -> bool:
    """Whether the bot has posted in the thread, by Slack's own record of it (for when
    Threadline's state cannot tell); False when Slack cannot say, or may not be asked now."""
    if not bot_user_id:
        return False
    read = await read_thread(
        client, gate, team=team, channel=channel, thread_ts=thread_ts, before_ts="inf"
    )
    return any(m.get("user") == bot_user_id for m in read.messages)


@dataclass(frozen=True)
class ThreadView:
    """What a turn sees of its thread beyond its conversation: ``messages`` (oldest first),
    and ``partial`` when some earlier messages were out of sight (``newest``: the ones seen
    are the thread's latest; else its first, as Slack hands them over)."""

    messages: list[dict[str, Any]]
    partial: bool = False
    newest: bool = True

    @property
    def notice(self) -> str | None:
        """What the asker is told when the view is partial."""
        if not self.partial:
            return None
        if not self.messages:
            return (
                "I can't see this thread's earlier messages right now (Slack limits how often "
                "apps may read threads), so I'm answering from your message alone."
            )
        which = "last" if self.newest else "first"
        count = len(self.messages)
        noun = "message" if count == 1 else f"{count} messages"
        return f"I can only see the {which} {noun} of this thread (Slack's limits on apps)."


class ThreadContext:
    """The earlier messages a turn in a thread needs: the transcript of what arrived while
    the bot followed the thread, and a read from Slack (paced by ``gate``) only when the
    bot joins a thread it has never read.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> cache = MemoryKeyValueStore()
    >>> context = ThreadContext(ThreadTranscript(cache), HistoryGate(cache))
    >>> note = {"ts": "2.0", "bot_id": "B9", "text": "deploy failed"}
    >>> asyncio.run(context.transcript.record("T1", "C1", "1.0", [note]))
    >>> view = asyncio.run(context.before(None, team="T1", channel="C1", thread_ts="1.0",
    ...                                   before_ts="3.0", joins=False))
    >>> [m["text"] for m in view.messages], view.partial
    (['deploy failed'], False)
    """

    def __init__(
        self, transcript: ThreadTranscript, gate: HistoryGate, *, limit: int = MAX_MESSAGES
    ) -> None:
        self.transcript = transcript
        self.gate = gate
        self.limit = limit

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The transcript and the gate as the running turn reads them."""
        return turn_view(turn_view(self, writes, "transcript"), writes, "gate")

    async def before(
        self,
        client: AsyncWebClient | None,
        *,
        team: str,
        channel: str,
        thread_ts: str,
        before_ts: str,
        joins: bool,
    ) -> ThreadView:
        """The thread's messages before ``before_ts`` the conversation lacks; ``joins`` for
        the turn that joined the thread (Slack is read unless it was read before)."""
        where = (team, channel, thread_ts)
        if not joins or client is None:
            return ThreadView(await self.transcript.told(*where, before_ts=before_ts))
        if await self.transcript.was_read(*where):
            seen = await self.transcript.told(*where, before_ts=before_ts)
            return ThreadView(seen)
        read = await read_thread(
            client,
            self.gate,
            team=team,
            channel=channel,
            thread_ts=thread_ts,
            before_ts=before_ts,
            limit=self.limit,
        )
        seen = await self.transcript.told(
            *where, before_ts=before_ts, read=read.messages if read.read else None
        )
        return ThreadView(seen, partial=not read.read or read.has_more, newest=not read.read)


def _author(message: Mapping[str, Any], bot_user_id: str | None) -> str:
    user = message.get("user")
    if user is not None and user == bot_user_id:
        return "you (the assistant)"
    if user is None:
        name = message.get("username")
        return f"a bot ({name})" if name else "a bot" if message.get("bot_id") else "someone"
    profile = message.get("user_profile") or {}
    name = profile.get("display_name") or profile.get("real_name")
    return f"<@{user}> ({name})" if name else f"<@{user}>"


def thread_prompt(
    messages: Sequence[Mapping[str, Any]],
    question: str,
    *,
    bot_user_id: str | None,
    max_chars: int = MAX_CHARS,
    notice: str | None = None,
) -> str:
    """``question`` preceded by the thread's earlier messages that fit ``max_chars`` (and by
    ``notice``, what could not be seen, so the answer can say so)."""
    lines: list[str] = []
    used = 0
    for message in reversed(messages):
        text = (message.get("text") or "").strip()
        if not text:
            continue
        line = f"{_author(message, bot_user_id)}: {truncate(text, MAX_MESSAGE_CHARS)}"
        if used + len(line) > max_chars:
            break
        lines.insert(0, line)
        used += len(line) + 1
    if notice is not None:
        lines.insert(0, f"({notice})")
    if not lines:
        return question
    history = "\n".join(lines)
    header = "Earlier messages in this Slack thread, oldest first:"
    return f"{header}\n{history}\n\nMy question: {question}"
