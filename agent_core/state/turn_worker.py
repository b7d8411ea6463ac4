"""``TurnWorker``: the loop that runs a ``TurnQueue``'s turns, shared by every back end, and
the ``Turn`` it hands each handler."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_core.errors import StateUnavailableError
from agent_core.state.turn_backend import Begun, Delivery, Readiness, Start, TurnBackend
from agent_core.state.turn_writes import TurnWrites

logger = logging.getLogger("threadline.state.turns")

FETCH_TIMEOUT = 1.0
WAIT_FIRST, WAIT_MAX = 0.01, 0.25
"""Backoff while an earlier turn of the thread runs elsewhere (local completions wake at once)."""
ANNOUNCED_FIRST, ANNOUNCED_MAX = 1.0, 2.0
"""Where the back end announces starts, the backoff of a turn waiting for its thread: only an
announcement missed (its subscription reconnecting) leaves it to ask."""
OUTAGE_FIRST, OUTAGE_MAX = 0.05, 1.0
MAX_WAITING = 1000
"""Turns over their asker's ``per_owner`` cap that one worker holds, waiting (no slot)."""


@dataclass
class Turn:
    """One accepted message, as a handler receives it.

    ``attempt`` is 1 on the first run; ``progress`` holds what earlier runs recorded;
    ``writes`` is the turn's ``TurnWrites`` where the queue writes them with its records
    (Redis: the handler hands them to its stores, ``for_turn``; else None);
    ``stop_requested`` is set before the handler is cancelled for its owner's Stop (any
    other cancellation is a shutdown or a lost lease: the turn is run again).

    >>> import asyncio
    >>> async def keep(progress, at_end): pass
    >>> turn = Turn("1-0", "slack:T1:C1:1.0", {"text": "hi"}, 2, {"reply_ts": "9.1"}, 0.0, keep)
    >>> turn.is_retry, turn.progress["reply_ts"]
    (True, '9.1')
    """

    id: str
    thread_key: str
    payload: dict[str, Any]
    attempt: int
    progress: dict[str, Any]
    enqueued_at: float
    _recorder: Callable[[dict[str, Any], bool], Awaitable[None]] = field(repr=False)
    writes: TurnWrites | None = field(default=None, repr=False)
    stop_requested: bool = field(default=False, init=False)

    @property
    def is_retry(self) -> bool:
        """True when an earlier run of this turn did not finish (its worker died)."""
        return self.attempt > 1

    async def record(self, **progress: Any) -> None:
        """Durably note what this run has done (JSON values), for a later re-run to see."""
        await self._recorder(progress, False)
        self.progress.update(progress)

    async def record_at_end(self, **progress: Any) -> None:
        """Note what the end of this run means (``answered=True``): where the back end
        completes a turn in one atomic step with the turn's other writes (Redis: its
        conversation commit), it is written with the completion - a turn completed is
        answered, one that is not is run again whole; elsewhere it is written at once."""
        await self._recorder(progress, True)
        self.progress.update(progress)


TurnHandler = Callable[[Turn], Awaitable[None]]


def default_consumer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class _Seat:
    """A delivery's place in this worker: whose it is, and whether it holds a slot yet."""

    owner: str | None
    holds_slot: bool


class TurnWorker:
    """Runs up to ``concurrency`` turns at once from ``queue``, at most ``per_owner`` of one
    asker's (None: no cap).

    Loops: *fetch* new turns while a slot is free; *claim* turns whose worker stopped
    renewing (checked every ``claim_after / 2`` seconds, and at start); *stop* the handlers
    whose owner asked (``request_stop``; the turn then completes); per turn, *renew* its
    lease every ``claim_after / 3`` seconds while it waits for its thread and runs. A turn
    whose lease was lost is cancelled here (another worker owns it now).
    While the back end is unavailable the loops back off and retry; nothing is dropped.

    Where the back end ``hands_over`` (Redis, SQLite), the worker is also the queue's
    ``Intake``: a turn recorded in this process may be delivered to it, and started, by the
    enqueue itself (``reserve`` / ``take``). A fetch then asks for half the free slots, so that
    hand-overs have slots of their own while it waits: the two never hold more turns
    than ``concurrency``.

    Where the back end ``announces_starts`` (Redis), a turn waiting for its thread is
    started by the completion of the turn before it and told so (``begun``): it asks the
    back end (``begin``) only when that announcement is late.

    A turn holds a slot while it waits for its thread and while it runs. One asker's turns
    beyond ``per_owner`` hold none: they wait here, in the order they came, until one of
    that asker's turns ends, so one person's many questions never keep another's waiting
    (at most ``MAX_WAITING`` such turns are held; a claimed turn is never held back, since
    the asker's later turns may be waiting for it in its thread).

    >>> from agent_core.state.turns_memory import MemoryTurnQueue
    >>> async def handler(turn): pass
    >>> TurnWorker(MemoryTurnQueue(), handler, concurrency=4, per_owner=2).per_owner
    2
    """

    def __init__(
        self,
        queue: TurnBackend,
        handler: TurnHandler,
        *,
        concurrency: int = 16,
        per_owner: int | None = None,
        max_attempts: int = 3,
        give_up: TurnHandler | None = None,
        consumer: str | None = None,
    ) -> None:
        if concurrency < 1 or max_attempts < 1 or (per_owner is not None and per_owner < 1):
            raise ValueError("concurrency, per_owner and max_attempts must be at least 1")
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.per_owner = per_owner
        self.max_attempts = max_attempts
        self.give_up = give_up
        self.consumer = consumer or default_consumer()
        self._free = concurrency
        self._fetching = 0
        """Slots the fetch waiting now may fill (hand-overs use only the others)."""
        self._slot_freed = asyncio.Event()
        self._completed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, tuple[Delivery, asyncio.Task[None], Turn]] = {}
        self._stopped: set[str] = set()
        self._holding: Counter[str] = Counter()
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._waiting_count = 0
        self._announcements: dict[str, asyncio.Future[Start]] = {}
        """The turns waiting for their thread here, where the back end announces starts."""
        self._announced_early: OrderedDict[str, Start] = OrderedDict()
        """Starts announced before their turn began to wait (at most ``MAX_WAITING``)."""

    async def run(self) -> None:
        helpers = [asyncio.create_task(self._claim_loop()), asyncio.create_task(self._stop_loop())]
        if self.queue.announces_starts:
            helpers.append(asyncio.create_task(self._begun_loop()))
        try:
            with self.queue.attach(self):
                await self._fetch_loop()
        finally:
            for task in [*helpers, *self._tasks]:
                task.cancel()
            await asyncio.gather(*helpers, *self._tasks, return_exceptions=True)

    # -- intake --------------------------------------------------------------------------

    async def _fetch_loop(self) -> None:
        backoff = OUTAGE_FIRST
        while True:
            while self._free <= 0 or self._waiting_count >= MAX_WAITING:
                self._slot_freed.clear()
                await self._slot_freed.wait()
            count = self._free - self._free // 2 if self.queue.hands_over else self._free
            self._fetching = count
            try:
                deliveries = await self.queue.fetch(self.consumer, count, FETCH_TIMEOUT)
            except StateUnavailableError as error:
                backoff = await _pause_for_outage("fetch", error, backoff)
                continue
            finally:
                self._fetching = 0
            backoff = OUTAGE_FIRST
            for delivery in deliveries:
                self._spawn(delivery)

    async def _claim_loop(self) -> None:
        backoff = OUTAGE_FIRST
        while True:
            try:
                for delivery in await self.queue.claim(self.consumer, self.concurrency):
                    logger.warning("claimed turn %s of a worker that stopped", delivery.id)
                    self._spawn(delivery, claimed=True)  # claims must never starve
            except StateUnavailableError as error:
                backoff = await _pause_for_outage("claim", error, backoff)
                continue
            backoff = OUTAGE_FIRST
            await asyncio.sleep(self.queue.claim_after / 2)  # a periodic timer, not a sync

    async def _stop_loop(self) -> None:
        backoff = OUTAGE_FIRST
        while True:
            try:
                async for request in self.queue.stop_requests():
                    backoff = OUTAGE_FIRST
                    self._stop(request.turn_id, request.by)
            except StateUnavailableError as error:
                backoff = await _pause_for_outage("stop requests", error, backoff)

    async def _begun_loop(self) -> None:
        backoff = OUTAGE_FIRST
        while True:
            try:
                async for begun in self.queue.begun(self.consumer):
                    backoff = OUTAGE_FIRST
                    self._announce(begun)
            except StateUnavailableError as error:
                backoff = await _pause_for_outage("announced starts", error, backoff)

    def _announce(self, begun: Begun) -> None:
        waiting = self._announcements.get(begun.turn_id)
        if waiting is None:  # the enqueue's reply not read yet, or the turn waits for a slot
            self._announced_early[begun.turn_id] = begun.start
            while len(self._announced_early) > MAX_WAITING:
                self._announced_early.popitem(last=False)
        elif not waiting.done():
            waiting.set_result(begun.start)

    def _stop(self, turn_id: str, by: str) -> None:
        running = self._handlers.get(turn_id)
        if running is None or turn_id in self._stopped:
            return  # not running here, or already stopping (a second click must not interrupt)
        delivery, handler, turn = running
        if delivery.owner is None or delivery.owner != by:
            logger.warning("refused to stop turn %s: not requested by its owner", turn_id)
            return
        self._stopped.add(turn_id)
        turn.stop_requested = True
        handler.cancel()

    # -- slots: the worker's, and one asker's ----------------------------------------------

    def _at_cap(self, owner: str | None) -> bool:
        return (
            owner is not None
            and self.per_owner is not None
            and self._holding[owner] >= self.per_owner
        )

    def _spawn(
        self,
        delivery: Delivery,
        *,
        claimed: bool = False,
        seated: bool = False,
        begun: Start | None = None,
    ) -> None:
        """Run ``delivery`` here: in a slot of its own (``seated``: one reserved for it),
        or waiting for one while its asker is at their cap (a claimed turn never waits)."""
        owner = delivery.owner
        over_cap = not seated and not claimed and self._at_cap(owner)
        seat = _Seat(owner, holds_slot=not over_cap)
        if over_cap:
            self._waiting_count += 1
        elif not seated:
            self._take_slot(owner)
        work = self._process(delivery, seat, begun)
        task = asyncio.create_task(work, name=f"turn:{delivery.id}")
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(done, seat))

    # -- the queue's intake: turns recorded in this process, handed over at once ----------

    def reserve(self, owner: str | None) -> bool:
        """Hold a slot for a turn of ``owner`` about to be recorded here: one the waiting
        fetch may not fill, and only when the asker is below their cap."""
        if self._free - self._fetching <= 0 or self._at_cap(owner):
            return False
        self._take_slot(owner)
        return True

    def unreserve(self, owner: str | None) -> None:
        """The turn was not handed over after all: the slot goes back."""
        self._hand_on(owner)
        self._slot_freed.set()

    def take(self, delivery: Delivery, start: Start | None) -> None:
        """Run a turn the enqueue delivered here, in the slot reserved for it; with ``start``
        it runs at once (the enqueue began it), else after its thread's earlier turns."""
        self._spawn(delivery, seated=True, begun=start or Start(Readiness.WAIT))

    def _take_slot(self, owner: str | None) -> None:
        self._free -= 1
        if owner is not None:
            self._holding[owner] += 1

    async def _seated(self, seat: _Seat) -> None:
        """Wait (holding no slot) until one of the asker's turns ends and hands its slot on."""
        if seat.holds_slot or seat.owner is None:
            return
        turn = asyncio.get_running_loop().create_future()
        queue = self._waiting.setdefault(seat.owner, deque())
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                seat.holds_slot = True  # handed a slot just as it was cancelled: give it back
            else:
                queue.remove(turn)
                self._waiting_count -= 1
                if not queue:
                    del self._waiting[seat.owner]
            raise
        seat.holds_slot = True

    def _finished(self, task: asyncio.Task[None], seat: _Seat) -> None:
        self._tasks.discard(task)
        if seat.holds_slot:
            self._hand_on(seat.owner)
        self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            logger.error("turn worker failed", exc_info=task.exception())

    def _hand_on(self, owner: str | None) -> None:
        """A turn ended: its slot goes to the asker's next waiting turn, else back."""
        self._free += 1
        if owner is None:
            return
        self._holding[owner] -= 1
        if not self._holding[owner]:
            del self._holding[owner]
        waiting = self._waiting.get(owner)
        if waiting:
            next_turn = waiting.popleft()
            if not waiting:
                del self._waiting[owner]
            self._waiting_count -= 1
            self._take_slot(owner)
            next_turn.set_result(None)

    # -- one turn ------------------------------------------------------------------------

    async def _process(self, delivery: Delivery, seat: _Seat, begun: Start | None) -> None:
        me = asyncio.current_task()
        assert me is not None
        lease = asyncio.create_task(self._keep_lease(delivery, me))
        try:
            await self._seated(seat)
            start = begun
            if start is None or start.readiness is Readiness.WAIT:
                start = await self._wait_for_thread(delivery, ask=start is None)
            if start.readiness is not Readiness.RUN:
                return
            writes = self.queue.turn_writes(start.read_ahead)  # written with its records
            try:
                await self._run_handler(delivery, start, writes)
                await self._complete(delivery, writes)
            finally:
                if writes is not None:
                    writes.close()  # a task of the turn that writes later writes at once
        finally:
            lease.cancel()

    async def _wait_for_thread(self, delivery: Delivery, *, ask: bool = True) -> Start:
        """The turn's start once its thread's earlier turns are done (``ask``: False when
        the back end just said they are not)."""
        announced = self._announcement(delivery.id)
        delay, longest = (
            (WAIT_FIRST, WAIT_MAX) if announced is None else (ANNOUNCED_FIRST, ANNOUNCED_MAX)
        )
        try:
            while True:
                completed = self._completed
                if announced is not None and announced.done():
                    return announced.result()
                if ask:
                    try:
                        start = await self.queue.begin(delivery, self.consumer)
                    except StateUnavailableError as error:
                        delay = await _pause_for_outage("begin", error, delay)
                        continue
                    if start.readiness is not Readiness.WAIT:
                        return start
                ask = True
                try:  # started by a completion here or elsewhere; asks in case it was missed
                    if announced is not None:
                        return await asyncio.wait_for(asyncio.shield(announced), delay)
                    await asyncio.wait_for(completed.wait(), delay)  # polls for remote ones
                except TimeoutError:
                    delay = min(delay * 2, longest)
        finally:
            self._announcements.pop(delivery.id, None)

    def _announcement(self, turn_id: str) -> asyncio.Future[Start] | None:
        """Where the back end announces starts: the future the announcement of this turn's
        start resolves (at once when it came early)."""
        if not self.queue.announces_starts:
            return None
        announced: asyncio.Future[Start] = asyncio.get_running_loop().create_future()
        early = self._announced_early.pop(turn_id, None)
        if early is not None:
            announced.set_result(early)
        self._announcements[turn_id] = announced
        return announced

    def _handler_for(self, delivery: Delivery, start: Start) -> TurnHandler | None:
        if start.attempt <= self.max_attempts:
            return self.handler
        logger.error("turn %s failed %d times; giving up", delivery.id, start.attempt - 1)
        return self.give_up

    async def _run_handler(
        self, delivery: Delivery, start: Start, writes: TurnWrites | None
    ) -> None:
        handler = self._handler_for(delivery, start)
        if handler is None:
            return

        async def record(progress: dict[str, Any], at_end: bool) -> None:
            staged = writes if writes is not None and writes.open else None  # else: turn over
            if at_end:
                await self.queue.save_final_progress(delivery, progress, staged)
            else:
                await self.queue.save_progress(delivery, progress, staged)

        turn = Turn(
            delivery.id,
            delivery.thread_key,
            dict(delivery.payload),
            start.attempt,
            dict(start.progress),
            delivery.enqueued_at,
            record,
            writes,
        )

        async def call() -> None:
            await handler(turn)

        running = asyncio.create_task(call(), name=f"turn-handler:{delivery.id}")
        self._handlers[delivery.id] = (delivery, running, turn)
        try:
            await running
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if delivery.id not in self._stopped or (me is not None and me.cancelling()):
                raise  # shutdown or lost lease: the turn stays pending for another run
            logger.info("turn %s stopped by its owner", delivery.id)
        except Exception:
            # The turn is over either way: a handler bug must not re-run it forever.
            logger.exception("turn %s handler failed", delivery.id)
        finally:
            self._handlers.pop(delivery.id, None)
            self._stopped.discard(delivery.id)

    async def _complete(self, delivery: Delivery, writes: TurnWrites | None) -> None:
        try:
            if not await self.queue.complete(delivery, self.consumer, writes):
                logger.warning("turn %s was taken over before it completed here", delivery.id)
        except StateUnavailableError:
            # Left pending: whoever claims it sees the progress this run recorded.
            logger.error("could not mark turn %s complete", delivery.id, exc_info=True)
        finally:
            completed, self._completed = self._completed, asyncio.Event()
            completed.set()

    async def _keep_lease(self, delivery: Delivery, owner: asyncio.Task[None]) -> None:
        while True:
            await asyncio.sleep(self.queue.claim_after / 3)  # a lease timer, not a sync
            try:
                still_ours = await self.queue.renew(delivery, self.consumer)
            except StateUnavailableError:
                continue  # cannot renew, and nobody can claim it while Redis is down
            if not still_ours:
                logger.warning("lost the lease of turn %s; stopping it here", delivery.id)
                owner.cancel()
                return


async def _pause_for_outage(step: str, error: StateUnavailableError, delay: float) -> float:
    logger.warning("turn queue %s: %s; retrying in %.2fs", step, error, delay)
    await asyncio.sleep(delay)  # backing off from an unreachable backend
    return min(delay * 2, OUTAGE_MAX)
