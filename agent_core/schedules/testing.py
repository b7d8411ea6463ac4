"""A clock tests move by hand: ``ManualClock``, shipped so users' tests need no real waits.

>>> import asyncio
>>> clock = ManualClock(1000.0)
>>> async def demo():
...     waiting = asyncio.ensure_future(clock.sleep(60))
...     await asyncio.sleep(0)
...     clock.advance(60)
...     await waiting
...     return clock.now()
>>> asyncio.run(demo())
1060.0
"""

from __future__ import annotations

import asyncio
import datetime as dt


class ManualClock:
    """Time stands still until ``advance`` or ``set``; sleepers wake when their time comes.

    ``skewed(seconds)`` is a view of the same time, ``seconds`` ahead (negative: behind),
    as another process's clock would be.

    >>> clock = ManualClock.at(dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC))
    >>> clock.skewed(5).now() - clock.now()
    5.0
    """

    def __init__(self, start: float, *, offset: float = 0.0, _base: ManualClock | None = None):
        self._base = _base or self
        self._offset = offset
        if _base is None:
            self._now = float(start)
            self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
            self._watchers: list[tuple[int, asyncio.Future[None]]] = []

    @classmethod
    def at(cls, moment: dt.datetime) -> ManualClock:
        return cls(moment.timestamp())

    def skewed(self, seconds: float) -> ManualClock:
        return ManualClock(0.0, offset=self._offset + seconds, _base=self._base)

    def now(self) -> float:
        return self._base._now + self._offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        base = self._base
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        base._sleepers.append((base._now + seconds, woken))
        base._notify()
        try:
            await woken
        finally:
            base._sleepers = [(at, f) for at, f in base._sleepers if f is not woken]

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking every sleeper whose time has come."""
        self.set(self.now() + seconds)

    def set(self, seconds: float) -> None:
        base = self._base
        base._now = seconds - self._offset
        for at, woken in list(base._sleepers):
            if at <= base._now and not woken.done():
                woken.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many tasks are waiting on this clock."""
        return sum(not woken.done() for _, woken in self._base._sleepers)

    async def sleeping(self, count: int = 1) -> None:
        """Until ``count`` tasks wait on this clock (a loop has settled into its sleep), so
        that a test moves time only once the loop waits for it."""
        base = self._base
        if self.sleepers >= count:
            return
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        base._watchers.append((count, ready))
        await ready

    def _notify(self) -> None:
        waiting = self.sleepers
        for count, ready in list(self._watchers):
            if waiting >= count and not ready.done():
                ready.set_result(None)
        self._watchers = [(c, r) for c, r in self._watchers if not r.done()]
