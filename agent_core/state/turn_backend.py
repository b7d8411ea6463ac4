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
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


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
    """``begin``'s answer; when ``RUN``, the attempt number, the recorded progress and what
    the back end read ahead for the turn's stores (``read_ahead``: key -> a string, a list's
    items, or ``None`` for a key that did not exist, as the turn began; see
    ``agent_core.state.turn_writes``).

    >>> Start(Readiness.RUN, 2, {"reply_ts": "1.2"}).attempt
    2
    """

    readiness: Readiness
    attempt: int = 0
    progress: dict[str, Any] = field(default_factory=dict)
    read_ahead: dict[str, Any] = field(default_factory=dict)


class Begun(NamedTuple):
    """The back end started ``turn_id`` for the worker it waits in (``announces_starts``).

    >>> Begun("7", Start(Readiness.RUN, 1)).start.attempt
    1
    """

    turn_id: str
    start: Start


class Intake(Protocol):
    """A worker running in this process, as its queue's ``enqueue`` sees it: a turn recorded
    here may be handed to it in the same step as it is recorded (no fetch, no ``begin``).

    ``reserve`` holds one of its slots for a turn of ``owner`` before the turn is recorded
    (False: none free, or the asker is at their cap here); the turn is then either
    ``take``-n (the slot is the turn's) or the slot is given back (``unreserve``).
    ``TurnWorker`` is one:

    >>> from agent_core.state.turn_worker import TurnWorker
    >>> from agent_core.state.turns_memory import MemoryTurnQueue
    >>> async def answer(turn): pass
    >>> worker = TurnWorker(MemoryTurnQueue(), answer, concurrency=1)
    >>> worker.reserve("T1:U1"), worker.reserve("T1:U2")
    (True, False)
    """

    consumer: str

    def reserve(self, owner: str | None) -> bool: ...

    def unreserve(self, owner: str | None) -> None: ...

    def take(self, delivery: Delivery, start: Start | None) -> None:
        """Run ``delivery``, recorded and delivered to ``consumer`` in one step: at once with
        ``start`` (its attempt counted), or, when ``start`` is None, once its thread's
        earlier turns are done (``begin``)."""


class Intakes:
    """The workers of this process attached to a queue that ``hands_over``: ``attached``
    while a worker runs, and the one ``reserve`` finds with a slot free for a turn of
    ``owner`` as a turn is recorded (None: no worker here, or none has a slot).

    >>> from agent_core.state.turn_worker import TurnWorker
    >>> from agent_core.state.turns_memory import MemoryTurnQueue
    >>> async def answer(turn): pass
    >>> worker, intakes = TurnWorker(MemoryTurnQueue(), answer, concurrency=1), Intakes()
    >>> with intakes.attached(worker):
    ...     intakes.reserve("T1:U1") is worker, intakes.reserve("T1:U2")
    (True, None)
    """

    def __init__(self) -> None:
        self._attached: list[Intake] = []

    def __len__(self) -> int:
        """How many workers are attached."""
        return len(self._attached)

    @contextlib.contextmanager
    def attached(self, intake: Intake) -> Iterator[None]:
        """Offer turns recorded in this process to ``intake`` while the block runs."""
        self._attached.append(intake)
        try:
            yield
        finally:
            self._attached.remove(intake)

    def reserve(self, owner: str | None) -> Intake | None:
        """A worker here with a slot held for a turn of ``owner``, if one has a slot free."""
        if not self._attached:
            return None
        return next((intake for intake in self._attached if intake.reserve(owner)), None)


class TurnBackend(ABC):
    """The primitives of a turn back end, as a ``TurnWorker`` calls them: take new turns
    (``fetch``) and abandoned ones (``claim``), ask whether one may run now (``begin``), keep
    its lease (``renew``), record progress, ``complete`` it, and hear stop requests.
    ``claim_after`` is the lease: seconds without a renewal before another worker may claim.
    """

    claim_after: float
    hands_over: bool = False
    """Whether ``enqueue`` can hand a turn to a worker of this process (``attach``)."""
    announces_starts: bool = False
    """Whether completing a turn starts its thread's next one for the worker it was delivered
    to and tells that worker (``begun``), so a worker waiting for its thread need not ask."""

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
    async def save_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        """Record ``progress``, and what the turn's stores staged in ``writes`` (the turn's
        ``turn_writes``) in the same step."""

    async def save_final_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        """``Turn.record_at_end``: at once by default (see ``RedisTurnQueue``)."""
        await self.save_progress(delivery, progress, writes)

    @abstractmethod
    async def complete(
        self, delivery: Delivery, consumer: str, writes: TurnWrites | None = None
    ) -> bool:
        """Remove the finished turn (unblocking its thread), with what its stores staged in
        ``writes`` in the same step; False when not ours any more."""

    @abstractmethod
    def stop_requests(self) -> AsyncIterator[StopRequest]:
        """Stop requests as they arrive, for one worker."""

    def begun(self, consumer: str) -> AsyncIterator[Begun]:
        """Where the back end ``announces_starts``: the turns started for ``consumer`` as
        their thread's previous turn completed, as they are started (an announcement can be
        missed: ``begin`` then gives the same start)."""
        raise NotImplementedError(f"{type(self).__name__} does not announce starts")

    def turn_writes(self, read_ahead: Mapping[str, Any] | None = None) -> TurnWrites | None:
        """One running turn's ``TurnWrites``, made by its worker as the turn starts: what the
        turn's other stores hand the queue to write with the turn's next progress record or
        completion (Redis: the conversation commit), and what the queue read for them as the
        turn began (``read_ahead``; see ``agent_core.state.turn_writes``). None by default:
        every store writes at once."""
        return None

    def attach(self, intake: Intake) -> contextlib.AbstractContextManager[object]:
        """While the block runs, ``enqueue`` in this process may hand turns to ``intake``
        (where ``hands_over``: Redis, SQLite). Nothing by default: turns wait for a ``fetch``."""
        return contextlib.nullcontext()
