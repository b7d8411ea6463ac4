"""Durable turns: accept a message (record it), answer it later on any worker, in order.

A bot *enqueues* each accepted message before acknowledging the delivery; workers *run*
them. Guarantees, on every back end:

- **per-thread order**: turns of one ``thread_key`` run one at a time, in enqueue order,
  whichever worker (or process) picks them up;
- **dedupe**: ``enqueue(..., dedupe_key=...)`` records the delivery key and the turn in one
  atomic step (a retried delivery is dropped, and a crash cannot drop it without the turn);
- **stop from anywhere**: ``request_stop(turn_id, by=user)`` cancels the turn's handler on
  whichever worker runs it, if ``by`` is the ``owner`` given at enqueue (only the asker may
  stop an answer); the turn then completes (the handler settles what it posted);
- **no silent loss** (SQLite and Redis): a turn whose worker dies is given to another
  worker after ``claim_after`` seconds without a lease renewal (on SQLite: at the next
  start). The new run sees ``turn.attempt > 1`` and what earlier runs ``record``-ed, so the
  handler can finish without posting twice, or tell the user the answer was interrupted.
  After ``max_attempts`` the ``give_up`` handler runs instead (a turn that kills its worker
  every time must not loop forever).

Wiring (a sketch; see ``agent_core/state/README.md`` for the Slack and Teams versions)::

    turn_id = await state.turns.enqueue(thread_key, event, dedupe_key=f"slack:{event_id}")
    await ack()  # after the turn is recorded
    ...
    async def answer(turn: Turn) -> None:
        if turn.progress.get("answered"):
            return                             # an earlier run finished; only the ack was lost
        if turn.is_retry:
            ...                                # resume, or post "I was interrupted" instead
        await turn.record(placeholder_ts=ts)   # before posting more
        ...
        await turn.record(answered=True)
    worker = asyncio.create_task(state.turns.run(answer, give_up=tell_interrupted))
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag
from agent_core.state.turn_backend import StopRequest, TurnBackend
from agent_core.state.turn_worker import Turn, TurnHandler, TurnWorker

__all__ = ["Turn", "TurnHandler", "TurnQueue"]


class TurnQueue(TurnBackend):
    """Where accepted turns wait for a worker. ``enqueue`` from ingress; ``run`` on workers.

    Back ends implement the ``TurnBackend`` primitives (``fetch``, ``claim``, ``begin``,
    ``renew``, ``save_progress``, ``complete``); the worker loop is shared (``TurnWorker``).

    >>> import asyncio
    >>> from agent_core.state.turns_memory import MemoryTurnQueue
    >>> queue = MemoryTurnQueue()
    >>> async def demo():
    ...     first = await queue.enqueue("thread-1", {"text": "hi"}, dedupe_key="Ev1")
    ...     again = await queue.enqueue("thread-1", {"text": "hi"}, dedupe_key="Ev1")
    ...     return first is not None, again
    >>> asyncio.run(demo())
    (True, None)
    """

    def __init__(self, *, claim_after: float = 30.0) -> None:
        if claim_after <= 0:
            raise ValueError("claim_after must be positive")
        self.claim_after = claim_after
        self._stop_listeners: set[asyncio.Queue[StopRequest]] = set()

    @abstractmethod
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
        """Record a turn; its id, or ``None`` when ``dedupe_key`` was already seen.

        ``owner`` (the asking user's id) is who may ``request_stop`` it. ``flag`` (a
        ``KeyValueStore.flag``) is added with the turn, in the same atomic step where the
        back ends allow; a duplicate delivery leaves it untouched."""

    async def request_stop(self, turn_id: str, *, by: str) -> None:
        """Ask the worker running ``turn_id`` to stop it (honoured when ``by`` is its owner).
        In-process back ends deliver it to this process's workers; Redis to every process."""
        for listener in list(self._stop_listeners):
            listener.put_nowait(StopRequest(turn_id, by))

    async def stop_requests(self) -> AsyncIterator[StopRequest]:
        """Stop requests as they arrive, for one worker."""
        listener: asyncio.Queue[StopRequest] = asyncio.Queue()
        self._stop_listeners.add(listener)
        try:
            while True:
                yield await listener.get()
        finally:
            self._stop_listeners.discard(listener)

    @abstractmethod
    async def pending(self) -> int:
        """How many turns are waiting or running (for health pages and tests)."""

    async def health(self) -> StateHealth:
        return StateHealth(ok=True, backend="memory")

    async def close(self) -> None:
        return None

    async def run(
        self,
        handler: TurnHandler,
        *,
        concurrency: int = 16,
        per_owner: int | None = None,
        max_attempts: int = 3,
        give_up: TurnHandler | None = None,
        consumer: str | None = None,
    ) -> None:
        """Work turns until cancelled; see ``TurnWorker``. Cancelling leaves in-flight
        turns to be claimed again (by this process's next start or another worker)."""
        worker = TurnWorker(
            self,
            handler,
            concurrency=concurrency,
            per_owner=per_owner,
            max_attempts=max_attempts,
            give_up=give_up,
            consumer=consumer,
        )
        await worker.run()
