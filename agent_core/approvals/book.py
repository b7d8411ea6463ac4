"""``ApprovalBook``: pending approvals in the state store, decided exactly once.

Every process sees the same book (a ``KeyValueStore``: SQLite for one process, Redis for
many), so a click landing on any process finds the approval, and a turn paused on one is
resumed on another. The one decision is an atomic ``add``: of two approvers clicking at
once, or a click racing the expiry sweep, exactly one wins and the other is told what
happened; running the approved calls is claimed the same way (``claim_run``), so a resumed
turn run twice (a re-run after a crash) never runs a tool twice.

Keys (``approval:`` prefix): the record, its decision, its run claim, where a channel showed
it, the expiry index (per channel, a few short lists per minute: a sweep reads those it has
not read yet, never all), the workspace index (per channel and workspace, the newest
``OPEN_KEPT`` approvals opened there: ``pending_for`` reads it to list what one person may
decide, so a home never scans the book), and ``ask_once`` approvals remembered.

>>> import asyncio
>>> from agent_core.approvals.record import ApprovalRecord
>>> from agent_core.state import MemoryKeyValueStore
>>> book = ApprovalBook(MemoryKeyValueStore())
>>> async def demo():
...     await book.open(ApprovalRecord.example())
...     first = await book.decide("a1", "approved", by=None)
...     second = await book.decide("a1", "denied", by=None)
...     return first is not None, second is None, (await book.get("a1")).state
>>> asyncio.run(demo())
(True, True, 'approved')
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self

from agent_core.approvals.record import ApprovalRecord
from agent_core.clock import SYSTEM_CLOCK
from agent_core.components import ApprovalState
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.state.keyvalue import KeyValueStore
    from agent_core.state.turn_writes import TurnWrites

log = logging.getLogger(__name__)

DecisionListener = Callable[[ApprovalRecord], Awaitable[None]]
"""Told of each decision this process made (the record, decided, with where it was shown)."""

KEEP_AFTER = 7 * 24 * 3600.0
"""How long a decided approval stays readable (a late click is told what happened)."""
SHARDS = 8
"""The expiry index: per minute of expiry, ``SHARDS`` short lists (one an approval joins)."""
CATCH_UP = 24 * 60
"""The most minutes one sweep reads back (after the sweepers were stopped for a long time;
an approval older than that still expires at its next click)."""
SWEPT = "approval:swept"
"""The minute every sweep of a channel has read up to (shared: no process reads a minute
twice); one per channel, as the expiry index (``lane_of``)."""
BUCKET_SIZE = 10_000
OPEN_KEPT = 200
"""Approvals a workspace's index keeps (the newest): ``pending_for`` reads at most these.
Approvals wait minutes, so an older one still pending is rare; it is decided in its thread."""


def lane_of(platform: object) -> str:
    """The expiry index an approval joins: its channel's, so each channel's bots sweep (and
    resume) their own even when Slack and Teams share one store.

    >>> lane_of("slack"), lane_of(None)
    ('slack', 'any')
    """
    return str(platform or "any")


def workspace_of(request: dict[str, Any]) -> str:
    """The workspace (Slack team, Teams tenant) an approval was asked in, from its request.

    >>> workspace_of({"workspace_id": "T1"}), workspace_of({})
    ('T1', 'any')
    """
    return str(request.get("workspace_id") or "any")


def _hex(text: str) -> bool:
    try:
        int(text[:8], 16)
    except ValueError:
        return False
    return True


class ApprovalBook:
    """The approvals of every conversation; see the module docstring.

    ``store`` is the state store (``None``: one in this process, made on first use);
    ``clock`` is injectable so tests move time instead of waiting. The listeners
    (``listen``) hear of each decision this process made (a click, a Stop, an expiry, a
    newer message), with the record and where a channel showed it: a channel updates that
    message in place. The agent's book is made before any channel serves it, and a
    decision may come from inside the agent (a newer message), so channels subscribe; a
    process serving one agent on two channels has two listeners.

    >>> ApprovalBook(clock=lambda: 42.0).clock()
    42.0
    """

    def __init__(
        self,
        store: KeyValueStore | None = None,
        *,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._store = store
        self.clock = clock
        self._listeners: list[DecisionListener] = []
        """Shared with every ``for_turn`` view (the same list: a later ``listen`` reaches them)."""

    @property
    def store(self) -> KeyValueStore:
        if self._store is None:
            from agent_core.state.keyvalue import MemoryKeyValueStore

            self._store = MemoryKeyValueStore(max_entries=10_000)
        return self._store

    def listen(self, listener: DecisionListener) -> Callable[[], None]:
        """Tell ``listener`` of each decision made through this book (or a ``for_turn`` view
        of it) from now on, after the listeners subscribed before it; its failure is logged,
        never undoes the decision nor keeps the others from hearing. Returns the function
        that unsubscribes it (a second call does nothing).

        >>> book = ApprovalBook()
        >>> async def show(record): ...
        >>> unsubscribe = book.listen(show)
        >>> unsubscribe(); unsubscribe()
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The book as the running turn uses it (its store's ``for_turn``; the same
        listeners)."""
        bound = self.store.for_turn(writes)
        if bound is self._store:
            return self
        view = copy.copy(self)
        view._store = bound
        return view

    @staticmethod
    def _key(approval_id: str, part: str = "") -> str:
        return f"approval:{approval_id}" + (f":{part}" if part else "")

    def _ttl(self, record: ApprovalRecord) -> float:
        return max(1.0, record.expires_at - self.clock()) + KEEP_AFTER

    @staticmethod
    def _bucket(lane: str, minute: int, shard: int) -> str:
        return f"approval:due:{lane}:{minute}:{shard}"

    async def open(self, record: ApprovalRecord) -> None:
        """Keep a new pending approval (and list it for the expiry sweep and its workspace),
        in one step (``write_all``)."""
        from agent_core.state.keyvalue import Push, Put  # the state package loads on first use

        ttl = self._ttl(record)
        shard = int(record.id[:8], 16) % SHARDS if _hex(record.id) else 0
        minute, lane = int(record.expires_at // 60), lane_of(record.request.get("platform"))
        opened = self._opened(lane, workspace_of(record.request))
        await self.store.write_all(
            [
                Put(self._key(record.id), record.model_dump(mode="json"), ttl=ttl),
                Push(self._bucket(lane, minute, shard), [record.id], keep=BUCKET_SIZE, ttl=ttl),
                # the first approval of the lane starts its sweeps at its minute
                Put(f"{SWEPT}:{lane}", minute, ttl=KEEP_AFTER, only_new=True),
                Push(opened, [record.id], keep=OPEN_KEPT, ttl=ttl),
            ]
        )

    @staticmethod
    def _opened(lane: str, workspace: str) -> str:
        return f"approval:open:{lane}:{workspace}"

    async def pending_for(
        self, user: User, *, platform: str | None, workspace: str, limit: int = 10
    ) -> list[ApprovalRecord]:
        """The pending, unexpired approvals asked in ``workspace`` of ``platform`` that
        ``user`` (as resolved now) may decide, newest first (at most ``limit``; read from
        the workspace index, never a scan of the book). Listing decides nothing: a click on
        one is checked again when it comes (``agent_core.turn.deciding``)."""
        now = self.clock()
        ids = await self.store.append(
            self._opened(lane_of(platform), workspace), [], keep=OPEN_KEPT
        )
        found: list[ApprovalRecord] = []
        for approval_id in reversed(list(dict.fromkeys(str(item) for item in ids))):
            record = await self.get(approval_id)
            if record is None or not record.pending or record.expired(now):
                continue
            if record.may_be_decided_by(user):
                found.append(record)
                if len(found) >= limit:
                    break
        return found

    async def get(self, approval_id: str) -> ApprovalRecord | None:
        """The approval as it stands (its decision applied), or None when unknown: the
        record, its decision and its message, read in one step (``get_many``)."""
        parts = [self._key(approval_id, part) for part in ("", "decision", "message")]
        stored, decision, message = await self.store.get_many(parts)
        if not isinstance(stored, dict):
            return None
        record = ApprovalRecord.model_validate(stored)
        if isinstance(decision, dict):
            record = record.model_copy(update=decision)
        if isinstance(message, dict):
            record = record.model_copy(update={"message": message})
        return record

    async def decide(
        self,
        approval_id: str,
        state: ApprovalState,
        *,
        by: User | None,
        note: str | None = None,
        read: ApprovalRecord | None = None,
    ) -> ApprovalRecord | None:
        """Record the one decision; the decided record, or None when another decision came
        first (or the approval is unknown). ``read``: the record as the caller has just read
        it (not read again; a decision made since loses the atomic ``add`` all the same)."""
        record = read if read is not None and read.id == approval_id else None
        record = record or await self.get(approval_id)
        if record is None or not record.pending:
            return None
        decided = record.decided(state, by=by, at=self.clock(), note=note)
        fields = ("state", "decided_by_id", "decided_by", "decided_at", "note")
        decision = decided.model_dump(mode="json", include=set(fields))
        if not await self.store.add(
            self._key(approval_id, "decision"), decision, ttl=self._ttl(record)
        ):
            return None
        for listener in list(self._listeners):  # one may unsubscribe while told
            try:
                await listener(decided)
            except Exception as error:  # the decision stands; its message stays as it was
                log.warning("approval %s: its message was not updated (%s)", decided.id, error)
        return decided

    async def claim_run(self, approval_id: str) -> bool:
        """True once: the caller runs the approved calls; anyone after it must not."""
        return await self.store.add(self._key(approval_id, "ran"), self.clock(), ttl=KEEP_AFTER)

    async def note_message(self, approval_id: str, where: dict[str, Any]) -> None:
        """Where a channel showed the approval (its message), to update it in place later."""
        await self.store.set(self._key(approval_id, "message"), where, ttl=KEEP_AFTER)

    async def due(
        self, now: float | None = None, *, platform: str | None = None
    ) -> list[ApprovalRecord]:
        """Pending approvals asked in ``platform`` (None: asked without one) whose time is
        up, for the expiry sweep of that channel: those of the minutes no sweep has read
        yet, and of this minute (read again by the next sweep)."""
        now = self.clock() if now is None else now
        minute, lane = int(now // 60), lane_of(platform)
        swept = await self.store.get(f"{SWEPT}:{lane}")
        start = max(int(swept) if isinstance(swept, int | float) else minute, minute - CATCH_UP)
        listed: list[str] = []
        for past in range(start, minute + 1):
            for shard in range(SHARDS):
                bucket = self._bucket(lane, past, shard)
                ids = await self.store.append(bucket, [], keep=BUCKET_SIZE)
                listed += [str(item) for item in ids]
        found: list[ApprovalRecord] = []
        for approval_id in dict.fromkeys(listed):
            record = await self.get(approval_id)
            if record is not None and record.pending and record.expired(now):
                found.append(record)
        # the next sweep starts at the earliest minute found due: if this process stops
        # before deciding them, the next one finds them again (a decided one is skipped)
        earliest = min([int(record.expires_at // 60) for record in found] + [minute])
        await self.store.set(f"{SWEPT}:{lane}", earliest, ttl=KEEP_AFTER)
        return found

    # --- ask_once ---------------------------------------------------------------------------

    @staticmethod
    def _once(conversation_id: str, user_id: str, tool: str, shape: str) -> str:
        return f"approval:once:{conversation_id}:{user_id}:{tool}:{shape}"

    async def remember_once(
        self, conversation_id: str, user_id: str, tool: str, shape: str, *, ttl: float
    ) -> None:
        """``ask_once``: this person approved this tool with arguments of this shape here."""
        await self.store.set(self._once(conversation_id, user_id, tool, shape), True, ttl=ttl)

    async def approved_once(
        self, conversation_id: str, user_id: str, tool: str, shape: str
    ) -> bool:
        return await self.store.get(self._once(conversation_id, user_id, tool, shape)) is True
