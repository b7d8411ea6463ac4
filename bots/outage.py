"""What a bot process keeps in memory while its shared state (Redis) is down.

Nothing durable can be written during an outage, so two things are remembered here, in
this process only, for both channels:

- ``RecentDeliveries``: deliveries already told "temporarily unavailable", so a platform's
  retry of the same delivery (Slack retries an event it thinks was lost; Teams redelivers)
  does not post a second notice;
- ``Unrecorded`` (with ``record_when_back``): what a turn posted but could not record is
  kept by turn id and recorded once the state is back, so the re-run of that turn takes
  back the partial answer and the notice posted during the outage
  (``adapters.<channel>.slot``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

RECORD_FIRST, RECORD_MAX = 0.05, 1.0
"""Backoff (seconds) between attempts to record a slot while the state is down."""


class RecentDeliveries:
    """Delivery keys seen in the last ``ttl`` seconds, at most ``keep`` of them.

    >>> recent = RecentDeliveries(ttl=60, clock=lambda: 0.0)
    >>> recent.first("slack:message:T1:C1:1.0"), recent.first("slack:message:T1:C1:1.0")
    (True, False)
    """

    def __init__(
        self, *, ttl: float = 600.0, keep: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.keep = keep
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first(self, key: str) -> bool:
        """True the first time ``key`` is seen within ``ttl`` (and remember it)."""
        now = self._clock()
        while self._seen and next(iter(self._seen.values())) <= now - self.ttl:
            self._seen.popitem(last=False)
        if key in self._seen:
            return False
        self._seen[key] = now
        while len(self._seen) > self.keep:
            self._seen.popitem(last=False)
        return True


P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)


class Recordable(Protocol[P_co]):
    """An answer slot (``adapters.slack.slot`` / ``adapters.teams.slot``): what it posted
    (``current``), and whether recording that failed."""

    unrecorded: bool

    @property
    def current(self) -> P_co | None: ...

    async def record_again(self) -> bool: ...


async def record_when_back(slot: Recordable[object], *, within: float, what: str) -> bool:
    """Record ``slot`` as soon as the state takes writes again, trying for ``within``
    seconds; True once recorded."""
    deadline = time.monotonic() + within
    delay = RECORD_FIRST
    while not await slot.record_again():
        if time.monotonic() + delay > deadline:
            log.warning("%s: gave up recording what a turn posted during the outage", what)
            return False
        await asyncio.sleep(delay)  # backing off from an unreachable state backend
        delay = min(delay * 2, RECORD_MAX)
    log.info("%s: recorded what a turn posted during the outage", what)
    return True


class Unrecorded(Generic[P]):
    """What turns posted but could not record, by turn id: kept in this process (the re-run
    of a turn here takes it back) and recorded in the background once the state is back."""

    def __init__(self, *, within: Callable[[], float], what: str) -> None:
        self._within = within
        self._what = what
        self._posted: dict[str, P] = {}
        self._recorders: set[asyncio.Task[None]] = set()

    def get(self, turn_id: str) -> P | None:
        return self._posted.get(turn_id)

    def keep(self, turn_id: str, slot: Recordable[P]) -> None:
        """After a turn: remember what ``slot`` posted while it is unrecorded (else forget it)."""
        posted = slot.current
        if not slot.unrecorded or posted is None:
            self._posted.pop(turn_id, None)
            return
        self._posted[turn_id] = posted
        task = asyncio.create_task(self._record_later(turn_id, slot))
        self._recorders.add(task)
        task.add_done_callback(self._recorders.discard)

    async def _record_later(self, turn_id: str, slot: Recordable[P]) -> None:
        if await record_when_back(slot, within=self._within(), what=self._what):
            self._posted.pop(turn_id, None)

    def cancel(self) -> None:
        """Stop recording (shutting down: best effort, the state is still down)."""
        for recorder in set(self._recorders):
            recorder.cancel()
