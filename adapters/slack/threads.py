"""``ThreadMembership``: the threads the bot takes part in (their follow-ups need no mention).

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
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from adapters.slack.context import thread_key
from agent_core.state import Flag, KeyValueStore

THREAD_TTL = 14 * 24 * 3600.0


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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._cache = cache
        self.shared = shared
        self.ttl = ttl
        self._keep = keep
        self._clock = clock
        self._known: OrderedDict[str, float | None] = OrderedDict()  # None: not joined

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
