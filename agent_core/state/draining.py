"""``DrainingTurnQueue``: stop a process's turn worker without leaving finished turns behind.

A process asked to stop (SIGTERM in a rolling restart) drains: it takes no new turns and
finishes the ones it holds, so nothing is re-run by another process.

Cancelling ``TurnQueue.run`` stops the worker at once: a turn whose handler has just returned
but whose completion has not reached the queue yet stays pending, and blocks its thread
until another worker claims it (``claim_after``, 30 s by default). Wrapped in this queue,
the worker can be *drained* first: it takes no new turns, and ``drain`` waits until every
turn it was given was completed (or ``timeout`` passed). Everything else passes through::

    queue = DrainingTurnQueue(state.turns)
    worker = asyncio.create_task(queue.run(answer))
    ...
    await queue.drain(timeout=10)  # at shutdown, then
    worker.cancel()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag
from agent_core.state.turn_backend import (
    Begun,
    Delivery,
    Intake,
    Readiness,
    Start,
    StopRequest,
)
from agent_core.state.turns import TurnQueue

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


class DrainingTurnQueue(TurnQueue):
    """``inner`` with a drain; see the module docstring.

    >>> import asyncio
    >>> from agent_core.state import MemoryTurnQueue
    >>> queue = DrainingTurnQueue(MemoryTurnQueue(claim_after=5))
    >>> queue.claim_after, asyncio.run(queue.drain(timeout=1))
    (5, True)
    """

    def __init__(self, inner: TurnQueue) -> None:
        super().__init__(claim_after=inner.claim_after)
        self.inner = inner
        self.hands_over = inner.hands_over
        self.announces_starts = inner.announces_starts
        self._held: set[str] = set()
        self._draining = False
        self._released = asyncio.Event()

    @property
    def draining(self) -> bool:
        """Whether ``drain`` began: no new turns are taken."""
        return self._draining

    def _take(self, deliveries: list[Delivery]) -> list[Delivery]:
        self._held.update(d.id for d in deliveries)
        return deliveries

    def _release(self, delivery: Delivery) -> None:
        self._held.discard(delivery.id)
        self._released.set()

    async def drain(self, *, timeout: float) -> bool:
        """Take no new turns; wait until the ones taken were completed. False on timeout."""
        self._draining = True
        try:
            async with asyncio.timeout(timeout):
                while self._held:
                    self._released.clear()
                    await self._released.wait()
        except TimeoutError:
            return False
        return True

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
        return await self.inner.enqueue(
            thread_key,
            payload,
            dedupe_key=dedupe_key,
            dedupe_ttl=dedupe_ttl,
            owner=owner,
            flag=flag,
        )

    async def fetch(self, consumer: str, count: int, timeout: float) -> list[Delivery]:
        if self._draining:
            await asyncio.sleep(timeout)  # as an empty queue would: no busy loop
            return []
        return self._take(await self.inner.fetch(consumer, count, timeout))

    async def claim(self, consumer: str, count: int) -> list[Delivery]:
        if self._draining:
            return []
        return self._take(await self.inner.claim(consumer, count))

    async def begin(self, delivery: Delivery, consumer: str) -> Start:
        start = await self.inner.begin(delivery, consumer)
        if start.readiness is Readiness.GONE:
            self._release(delivery)
        return start

    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        return await self.inner.renew(delivery, consumer)

    def turn_writes(self, read_ahead: Mapping[str, Any] | None = None) -> TurnWrites | None:
        return self.inner.turn_writes(read_ahead)

    def attach(self, intake: Intake) -> contextlib.AbstractContextManager[object]:
        """Turns handed over count as taken (``drain`` waits for them); none while draining."""
        return self.inner.attach(_DrainingIntake(self, intake))

    async def save_final_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        await self.inner.save_final_progress(delivery, progress, writes)

    async def save_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        await self.inner.save_progress(delivery, progress, writes)

    async def complete(
        self, delivery: Delivery, consumer: str, writes: TurnWrites | None = None
    ) -> bool:
        try:
            return await self.inner.complete(delivery, consumer, writes)
        finally:
            self._release(delivery)

    async def request_stop(self, turn_id: str, *, by: str) -> None:
        await self.inner.request_stop(turn_id, by=by)

    async def stop_requests(self) -> AsyncIterator[StopRequest]:
        async for request in self.inner.stop_requests():
            yield request

    async def begun(self, consumer: str) -> AsyncIterator[Begun]:
        async for begun in self.inner.begun(consumer):
            yield begun

    async def pending(self) -> int:
        return await self.inner.pending()

    async def health(self) -> StateHealth:
        return await self.inner.health()

    async def close(self) -> None:
        await self.inner.close()


class _DrainingIntake:
    """A worker's intake as a draining queue passes it on: it takes no turn once draining
    began, and every turn it takes is held until it completes."""

    def __init__(self, queue: DrainingTurnQueue, intake: Intake) -> None:
        self._queue = queue
        self._intake = intake
        self.consumer = intake.consumer

    def reserve(self, owner: str | None) -> bool:
        return not self._queue.draining and self._intake.reserve(owner)

    def unreserve(self, owner: str | None) -> None:
        self._intake.unreserve(owner)

    def take(self, delivery: Delivery, start: Start | None) -> None:
        self._queue._take([delivery])
        self._intake.take(delivery, start)
