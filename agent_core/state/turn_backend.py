"""What a turn back end implements: the primitives a ``TurnWorker`` drives, and the records
they exchange.

``TurnQueue`` (``agent_core.state.turns``) is a ``TurnBackend`` plus what ingress and the
bots call (``enqueue``, ``request_stop``, ``run``); ``TurnWorker`` needs only this part, so
the queue can start a worker without the two modules importing each other.
"""

from __future__ import annotations

import contextlib
import enum
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Delivery:
    """An enqueued turn as a back end hands it to a worker.

    >>> Delivery("7", "slack:T1:C1:1.0", {"text": "hi"}, 0.0, owner="T1:U1").owner
    'T1:U1'
    """

    id: str
    thread_key: str
    payload: dict[str, Any]
    enqueued_at: float
    owner: str | None = None
    """who may stop it (``enqueue(owner=...)``)"""


class StopRequest(NamedTuple):
    """``by`` asked to stop ``turn_id`` (honoured only when ``by`` is the turn's owner).

    >>> StopRequest("7", "T1:U1").by
    'T1:U1'
    """

    turn_id: str
    by: str


class Readiness(enum.Enum):
    """What ``TurnQueue.begin`` answers about a delivered turn.

    >>> Readiness("wait") is Readiness.WAIT
    True
    """

    RUN = "run"
    WAIT = "wait"
    """an earlier turn of the same thread has not finished"""
    GONE = "gone"
    """completed or taken over by another worker: nothing to do"""


@dataclass(frozen=True)
class Start:
    """``begin``'s answer; when ``RUN``, the attempt number and the recorded progress.

    >>> Start(Readiness.RUN, 2, {"reply_ts": "1.2"}).attempt
    2
    """

    readiness: Readiness
    attempt: int = 0
    progress: dict[str, Any] = field(default_factory=dict)


class TurnBackend(ABC):
    """The primitives of a turn back end, as a ``TurnWorker`` calls them: take new turns
    (``fetch``) and abandoned ones (``claim``), ask whether one may run now (``begin``), keep
    its lease (``renew``), record progress, ``complete`` it, and hear stop requests.
    ``claim_after`` is the lease: seconds without a renewal before another worker may claim.
    """

    claim_after: float

    @abstractmethod
    async def fetch(self, consumer: str, count: int, timeout: float) -> list[Delivery]:
        """Up to ``count`` new turns for ``consumer``, waiting up to ``timeout`` for one."""

    @abstractmethod
    async def claim(self, consumer: str, count: int) -> list[Delivery]:
        """Turns whose worker stopped renewing for ``claim_after`` seconds, now ours."""

    @abstractmethod
    async def begin(self, delivery: Delivery, consumer: str) -> Start:
        """May ``consumer`` run the turn now? Counts an attempt when it may."""

    @abstractmethod
    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        """Extend ``consumer``'s lease; False when the turn is no longer its own."""

    @abstractmethod
    async def save_progress(self, delivery: Delivery, progress: dict[str, Any]) -> None: ...

    async def save_final_progress(self, delivery: Delivery, progress: dict[str, Any]) -> None:
        """``Turn.record_at_end``: at once by default (see ``RedisTurnQueue``)."""
        await self.save_progress(delivery, progress)

    @abstractmethod
    async def complete(self, delivery: Delivery, consumer: str) -> bool:
        """Remove the finished turn (unblocking its thread); False when not ours any more."""

    @abstractmethod
    def stop_requests(self) -> AsyncIterator[StopRequest]:
        """Stop requests as they arrive, for one worker."""

    def turn_writes(self) -> contextlib.AbstractContextManager[object]:
        """Around one turn on a worker: what the turn's other stores may hand the queue to
        write with its next progress record or completion (Redis: the conversation commit,
        ``agent_core.state.turn_writes``). Nothing by default."""
        return contextlib.nullcontext()
