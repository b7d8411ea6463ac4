"""The threads the bot takes part in: ``ThreadMembership`` (their follow-ups need no mention)
and ``ThreadTranscript`` (what was said in them that the bot's conversation lacks).

The bot joins a thread when it is mentioned there (or starts it); after that, every
message in the thread is a question for it. Flags live in the shared cache
(``state.cache``), so a follow-up is recognised by whichever process receives it. A flag
lasts ``ttl`` seconds after the last time it was refreshed: ``contains`` refreshes flags
older than half their life, so a busy thread stays joined at one extra write per
``ttl / 2``.

Every thread reply in every channel the bot is in is checked, so answers are also kept in
this process: threads it knows the bot joined, and, when this process is the only writer
(``shared=False``: memory or SQLite state), threads it knows the bot did not join. With a
shared cache (Redis) another process may join a thread at any moment, so "not joined" is
always asked again.

The transcript of a followed thread holds what other apps post there (an alert, a deploy
bot), recorded from events as they arrive, and what a read of the thread returned when the
bot joined it; people's messages there are turns, so the conversation has them. Each turn
marks how far it has been told (``{"told": ts}``), so the next one is given only what came
after: one round trip a turn, and no Web API call.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from adapters.slack.context import thread_key
from agent_core.clock import SYSTEM_CLOCK
from agent_core.state import Flag, KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

THREAD_TTL = 14 * 24 * 3600.0
KEEP = 60
"""Entries a thread's transcript keeps (messages and marks), newest first out."""
ENTRY_CHARS = 1500
"""Characters of a message's text the transcript keeps."""


class ThreadMembership:
    """``join`` a thread (True the first time); ``contains`` for follow-ups.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> threads = ThreadMembership(MemoryKeyValueStore())
    >>> [asyncio.run(threads.join("T1", "C1", "1.0")) for _ in range(2)]
    [True, False]
    >>> [asyncio.run(threads.contains("T1", "C1", ts)) for ts in ("1.0", "2.0")]
    [True, False]
    """

    def __init__(
        self,
        cache: KeyValueStore,
        *,
        shared: bool = True,
        ttl: float = THREAD_TTL,
        keep: int = 50_000,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._cache = cache
        self.shared = shared
        self.ttl = ttl
        self._keep = keep
        self._clock = clock
        self._known: OrderedDict[str, float | None] = OrderedDict()  # None: not joined

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The membership as the running turn reads it (its cache's ``for_turn``)."""
        return turn_view(self, writes, "_cache")

    @staticmethod
    def _key(team: str, channel: str, thread_ts: str) -> str:
        return f"slack:thread:{thread_key(team, channel, thread_ts)}"

    def _remember(self, key: str, joined_at: float | None) -> None:
        self._known[key] = joined_at
        self._known.move_to_end(key)
        while len(self._known) > self._keep:
            self._known.popitem(last=False)

    async def join(self, team: str, channel: str, thread_ts: str) -> bool:
        """Take part in the thread; True when the bot was not part of it before."""
        flag = self.flag(team, channel, thread_ts)
        await flag.add()
        return self.joined(flag)

    def flag(self, team: str, channel: str, thread_ts: str) -> Flag:
        """Joining the thread as a ``Flag``: added with the turn that joins it
        (``TurnQueue.enqueue(..., flag=...)``, one step before the ack); then ``joined``."""
        return self._cache.flag(self._key(team, channel, thread_ts), self._clock(), ttl=self.ttl)

    def joined(self, flag: Flag) -> bool:
        """Note the thread ``flag`` joined (added with a turn, or by ``join``); True when
        the bot was not part of it before."""
        added = bool(flag.added)
        if added or flag.key not in self._known or self._known[flag.key] is None:
            self._remember(flag.key, float(flag.value))
        return added

    def saw_joined(self, team: str, channel: str, thread_ts: str) -> None:
        """Note here that the bot takes part in the thread, as Slack's own record of it says
        (read when the shared cache could not be asked): later replies need not ask again."""
        self._remember(self._key(team, channel, thread_ts), self._clock())

    def joined_here(self, team: str, channel: str, thread_ts: str) -> bool:
        """Whether this process saw the bot join the thread (no I/O: for when the shared
        cache cannot be asked)."""
        return self._known.get(self._key(team, channel, thread_ts)) is not None

    async def contains(self, team: str, channel: str, thread_ts: str) -> bool:
        key, now = self._key(team, channel, thread_ts), self._clock()
        if key in self._known:
            joined = self._known[key]
            if joined is None and not self.shared:
                return False
            if joined is not None and now - joined <= self.ttl / 2:
                return True
        stored = await self._cache.get(key)
        if stored is None:
            self._remember(key, None)
            return False
        joined = float(stored) if isinstance(stored, int | float) else 0.0
        if now - joined > self.ttl / 2:
            await self._cache.set(key, now, ttl=self.ttl)
            joined = now
        self._remember(key, joined)
        return True


class ThreadTranscript:
    """``record`` messages of a followed thread; ``told`` gives a turn what it lacks.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> transcript = ThreadTranscript(MemoryKeyValueStore())
    >>> alert = {"ts": "5.0", "bot_id": "B1", "username": "pager", "text": "db down"}
    >>> asyncio.run(transcript.record("T1", "C1", "1.0", [alert]))
    >>> [m["text"] for m in asyncio.run(transcript.told("T1", "C1", "1.0", before_ts="6.0"))]
    ['db down']
    >>> asyncio.run(transcript.told("T1", "C1", "1.0", before_ts="7.0"))  # told already
    []
    """

    def __init__(self, cache: KeyValueStore, *, keep: int = KEEP, ttl: float = THREAD_TTL) -> None:
        self._cache = cache
        self.keep = keep
        self.ttl = ttl

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The transcript as the running turn reads and marks it (its cache's ``for_turn``:
        on Redis, a log read as the turn started is appended to with its completion)."""
        return turn_view(self, writes, "_cache")

    @staticmethod
    def _key(team: str, channel: str, thread_ts: str) -> str:
        return f"slack:thread-messages:{thread_key(team, channel, thread_ts)}"

    async def record(
        self, team: str, channel: str, thread_ts: str, messages: Sequence[Mapping[str, Any]]
    ) -> None:
        """Keep ``messages`` (Slack message objects) of the thread."""
        entries = [entry for m in messages if (entry := transcript_entry(m)) is not None]
        if entries:
            key = self._key(team, channel, thread_ts)
            await self._cache.append(key, entries, keep=self.keep, ttl=self.ttl)

    async def forget(self, person: str, *, dry_run: bool = False) -> int:
        """Drop the messages of ``person`` (``slack:TEAM:USER``) from every transcript of
        their workspace (``threadline forget``); how many. Each transcript is read and
        written again (its TTL restarts): a message another process adds in between may be
        missing from it, as if the transcript had expired (the thread is read again)."""
        platform, _, rest = person.partition(":")
        team, _, user = rest.partition(":")
        if platform != "slack" or not user:
            return 0
        removed = 0
        for key in await self._cache.keys(self._key(team, "*", "*")):
            log = await self._cache.append(key, [], keep=self.keep)
            kept = [e for e in log if not (isinstance(e, Mapping) and e.get("user") == user)]
            removed += len(log) - len(kept)
            if len(kept) < len(log) and not dry_run:
                await self._cache.delete(key)
                if kept:
                    await self._cache.append(key, kept, keep=self.keep, ttl=self.ttl)
        return removed

    async def was_read(self, team: str, channel: str, thread_ts: str) -> bool:
        """Whether the thread was read from Slack already (a re-run, a re-join)."""
        log = await self._cache.append(self._key(team, channel, thread_ts), [], keep=self.keep)
        return any("read" in item for item in log if isinstance(item, Mapping))

    async def told(
        self,
        team: str,
        channel: str,
        thread_ts: str,
        *,
        before_ts: str,
        read: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The messages before ``before_ts`` no earlier turn was told (with ``read``, what a
        read of the thread returned, kept first), marking them told: one round trip."""
        entries = [e for m in read or () if (e := transcript_entry(m)) is not None]
        if read is not None:
            entries.append({"read": before_ts})
        entries.append({"told": before_ts})
        key = self._key(team, channel, thread_ts)
        log = await self._cache.append(key, entries, keep=self.keep, ttl=self.ttl)
        return untold(log, before_ts)


def transcript_entry(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the transcript keeps of a Slack message (None for one without text or ts).

    >>> transcript_entry({"ts": "2.0", "user": "U1", "text": "hi", "blocks": [], "team": "T1"})
    {'ts': '2.0', 'text': 'hi', 'user': 'U1'}
    """
    ts, text = message.get("ts"), message.get("text") or _attachments_text(message)
    if not isinstance(ts, str) or not isinstance(text, str) or not text.strip():
        return None
    entry: dict[str, Any] = {"ts": ts, "text": text[:ENTRY_CHARS]}
    for name in ("user", "bot_id", "username"):
        if isinstance(value := message.get(name), str):
            entry[name] = value
    profile = message.get("user_profile")
    shown = profile.get("display_name") if isinstance(profile, Mapping) else None
    if isinstance(shown, str) and shown:
        entry["user_profile"] = {"display_name": shown}
    return entry


def _attachments_text(message: Mapping[str, Any]) -> str:
    """An app's message whose text is all in legacy attachments (alerting tools post so)."""
    attachments = message.get("attachments")
    if not isinstance(attachments, list):
        return ""
    parts = (a.get("fallback") or a.get("text") for a in attachments if isinstance(a, Mapping))
    return "\n".join(part for part in parts if isinstance(part, str) and part.strip())


def ts_value(value: Any) -> float:
    """A Slack ``ts`` as a number to order by (``inf`` for one that is not a number)."""
    try:
        ts = float(value)
    except (TypeError, ValueError):
        return math.inf
    return ts if math.isfinite(ts) else math.inf


def untold(log: Sequence[Any], before_ts: str) -> list[dict[str, Any]]:
    """The messages of ``log`` after the last turn before ``before_ts`` was told, and before
    ``before_ts``: oldest first, each once.

    >>> untold([{"ts": "1.0", "text": "a"}, {"told": "2.0"}, {"ts": "3.0", "text": "b"},
    ...         {"ts": "3.0", "text": "b"}, {"told": "4.0"}], "4.0")
    [{'ts': '3.0', 'text': 'b'}]
    """
    before = ts_value(before_ts)
    items = [item for item in log if isinstance(item, Mapping)]
    told = [ts_value(item["told"]) for item in items if "told" in item]
    since = max((ts for ts in told if ts < before), default=-math.inf)
    messages = {
        ts: dict(item)
        for item in items
        if isinstance(item.get("text"), str) and since < (ts := ts_value(item.get("ts"))) < before
    }
    return [messages[ts] for ts in sorted(messages)]
