"""``Clock``: the time schedules read and wait on, injected everywhere (tests advance a
``ManualClock`` from ``agent_core.schedules.testing`` instead of sleeping for minutes)."""

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


def instant(seconds: float) -> dt.datetime:
    """Epoch seconds as an aware UTC datetime.

    >>> instant(0).isoformat()
    '1970-01-01T00:00:00+00:00'
    """
    return dt.datetime.fromtimestamp(seconds, dt.UTC)
