"""``MemoryTurnQueue``: the in-process turn queue (tests, ``--ephemeral``, one process)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_core.clock import SYSTEM_CLOCK
from agent_core.state.keyvalue import Flag, MemoryKeyValueStore, encode
from agent_core.state.turn_backend import Delivery, Readiness, Start
from agent_core.state.turns import TurnQueue

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


@dataclass
class _Entry:
    delivery: Delivery
    owner: str | None = None
    lease_until: float = 0.0
    attempts: int = 0
    progress: dict[str, Any] = field(default_factory=dict)


class MemoryTurnQueue(TurnQueue):
    """Turns held in this process: ordered per thread and deduplicated like the durable
    queues, but lost if the process exits (use ``SqliteTurnQueue`` or ``RedisTurnQueue``
    where that matters).

    >>> import asyncio
    >>> async def demo():
    ...     queue, seen = MemoryTurnQueue(), []
    ...     done = asyncio.Event()
    ...     async def answer(turn):
    ...         seen.append(turn.payload["text"])
    ...         if len(seen) == 2:
    ...             done.set()
    ...     await queue.enqueue("t1", {"text": "first"})
    ...     await queue.enqueue("t1", {"text": "second"})
    ...     worker = asyncio.create_task(queue.run(answer))
    ...     await done.wait()
    ...     worker.cancel()
    ...     return seen
    >>> asyncio.run(demo())
    ['first', 'second']
    """

    def __init__(
        self,
        *,
        claim_after: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        max_seen: int = 100_000,
    ) -> None:
        super().__init__(claim_after=claim_after)
        self._clock = clock
        self._ids = itertools.count(1)
        self._entries: dict[str, _Entry] = {}
        self._threads: dict[str, deque[str]] = {}
        self._new: deque[str] = deque()
        self._arrived = asyncio.Event()
        self._seen = MemoryKeyValueStore(clock=clock, max_entries=max_seen)

    async def enqueue(
        self,
        thread_key: str,
        payload: dict[str, Any],
        *,
        dedupe_key: str | None = None,
        dedupe_ttl: float = 3600.0,
        owner: str | None = None,
        flag: Flag | None = None,
    ) -> str | None:
        encode(payload)  # same rule as the durable queues: JSON or nothing
        if dedupe_key is not None and not await self._seen.add(dedupe_key, ttl=dedupe_ttl):
            if flag is not None:
                flag.added = False
            return None
        if flag is not None:  # nothing else runs in between: one step in this process
            payload = flag.payload(payload) if await flag.add() else payload
        turn_id = str(next(self._ids))
        delivery = Delivery(turn_id, thread_key, dict(payload), SYSTEM_CLOCK.now(), owner)
        self._entries[turn_id] = _Entry(delivery)
        self._threads.setdefault(thread_key, deque()).append(turn_id)
        self._new.append(turn_id)
        self._arrived.set()
        return turn_id

    def _own(self, entry: _Entry, consumer: str) -> Delivery:
        entry.owner, entry.lease_until = consumer, self._clock() + self.claim_after
        return entry.delivery

    async def fetch(self, consumer: str, count: int, timeout: float) -> list[Delivery]:
        if not self._new:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout)
            except TimeoutError:
                return []
        taken: list[Delivery] = []
        while self._new and len(taken) < count:
            entry = self._entries.get(self._new.popleft())
            if entry is not None:
                taken.append(self._own(entry, consumer))
        return taken

    async def claim(self, consumer: str, count: int) -> list[Delivery]:
        now = self._clock()
        stale = [e for e in self._entries.values() if e.owner is not None and e.lease_until < now][
            :count
        ]
        return [self._own(entry, consumer) for entry in stale]

    async def begin(self, delivery: Delivery, consumer: str) -> Start:
        entry = self._entries.get(delivery.id)
        if entry is None or entry.owner != consumer:
            return Start(Readiness.GONE)
        if self._threads[delivery.thread_key][0] != delivery.id:
            return Start(Readiness.WAIT)
        entry.attempts += 1
        return Start(Readiness.RUN, entry.attempts, dict(entry.progress))

    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        entry = self._entries.get(delivery.id)
        if entry is None or entry.owner != consumer:
            return False
        self._own(entry, consumer)
        return True

    async def save_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        encode(progress)
        entry = self._entries.get(delivery.id)
        if entry is not None:
            entry.progress.update(progress)

    async def complete(
        self, delivery: Delivery, consumer: str, writes: TurnWrites | None = None
    ) -> bool:
        entry = self._entries.get(delivery.id)
        if entry is None or entry.owner != consumer:
            return False
        del self._entries[delivery.id]
        thread = self._threads[delivery.thread_key]
        thread.remove(delivery.id)
        if not thread:
            del self._threads[delivery.thread_key]
        return True

    async def pending(self) -> int:
        return len(self._entries)
