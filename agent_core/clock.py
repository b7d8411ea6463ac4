"""``Clock``: the one "now" of Threadline, injected everywhere a day, a month, a period, an
expiry or a schedule is computed (tests pin it, or advance a ``ManualClock`` from
``agent_core.schedules.testing`` instead of sleeping for minutes).

Production code never reads the machine's clock itself: it is handed a ``Clock`` (the
composition root builds one ``SystemClock`` and passes it down), or takes
``SYSTEM_CLOCK`` as its default. ``utcnow(clock)`` and ``today(clock)`` are the calendar
views of the same instant, always in UTC: a period never depends on the machine's zone."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock seconds since the epoch, and a way to wait for some of them to pass."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The machine's clock.

    >>> SystemClock().now() > 1.7e9
    True
    """

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))  # the dispatcher's timer: real time passing


SYSTEM_CLOCK = SystemClock()
"""The machine's clock, for defaults; a bot passes its own (one per process)."""


def utcnow(clock: Clock = SYSTEM_CLOCK) -> dt.datetime:
    """The clock's instant as an aware UTC datetime.

    >>> from agent_core.schedules.testing import ManualClock
    >>> utcnow(ManualClock(86400.5)).isoformat()
    '1970-01-02T00:00:00.500000+00:00'
    """
    return instant(clock.now())


def today(clock: Clock = SYSTEM_CLOCK) -> dt.date:
    """The clock's date in UTC (never the machine's zone).

    >>> from agent_core.schedules.testing import ManualClock
    >>> today(ManualClock(86399.0)).isoformat()
    '1970-01-01'
    """
    return utcnow(clock).date()


def instant(seconds: float) -> dt.datetime:
    """Epoch seconds as an aware UTC datetime.

    >>> instant(0).isoformat()
    '1970-01-01T00:00:00+00:00'
    """
    return dt.datetime.fromtimestamp(seconds, dt.UTC)
