"""The calendar guard: the tests that depend on the date run once more under other dates.

On 1 December the suite failed because tests named November's figures and a store expired
budget counters by the real clock while the code named the period by a pinned one. So
``./scripts/test`` passes ``--calendar``: every test of a date-sensitive module (one that
names a day, a period, an expiry or the demo shop's months: ``names_a_day``) runs again
under each of ``MOMENTS``, in the same run, with ``time-machine`` moving the process's
clock (``time.time``, ``datetime.now``, ``date.today``, the local zone). A subprocess a test
starts gets the same moment through ``libfaketime`` (``faked_env``).

A moment is a wall-clock time: time goes on from it while the test runs (``tick``); the
monotonic clock, which timers and asyncio read, is never moved.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Moment:
    """A date a test is run under: a name for the test id, and the local time and zone."""

    name: str
    local: dt.datetime

    @property
    def zone(self) -> str:
        return str(self.local.tzinfo)


MOMENTS = (
    Moment("first-of-month", dt.datetime(2027, 3, 1, 0, 0, 30, tzinfo=ZoneInfo("UTC"))),
    Moment("last-of-month", dt.datetime(2027, 4, 30, 23, 0, tzinfo=ZoneInfo("UTC"))),
    Moment("leap-day", dt.datetime(2028, 2, 29, 12, 0, tzinfo=ZoneInfo("UTC"))),
    Moment("new-years-eve", dt.datetime(2026, 12, 31, 23, 0, tzinfo=ZoneInfo("UTC"))),
    # UTC+14: already 1 July there while it is 30 June (11:00) in UTC
    Moment(
        "tomorrow-in-kiritimati",
        dt.datetime(2027, 7, 1, 1, 0, tzinfo=ZoneInfo("Pacific/Kiritimati")),
    ),
)

# What makes a test module date-sensitive: it names a day, a period, an expiry, a schedule's
# clock or the demo shop's figures (which change with the month).
_NAMES_A_DAY = re.compile(
    r"\bdatetime\(\s*20\d\d|\bdate\(\s*20\d\d|\btoday\s*[=(]|\.today\b|ManualClock|utcnow"
    r"|month_window|top_customer|period_bounds|expires_at|expires_in|calendar_moment"
)
# Modules that match but only through a fixed example date in a payload, or whose cost
# (a browser, processes killed mid-turn) is out of proportion: their date-sensitive paths
# are covered by the in-process tests above them. The guard's own test moves its canary, not
# itself.
_EXEMPT = {"test_browser.py", "test_kubernetes.py", "test_calendar_guard.py"}


def names_a_day(path: Path) -> bool:
    """Whether the test module at ``path`` depends on the date (see the module)."""
    if path.name in _EXEMPT or "e2e" in path.parts:
        return False
    return bool(_NAMES_A_DAY.search(path.read_text(encoding="utf-8")))


def _libfaketime() -> Path | None:
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    return found[0] if found else None


def faked_env(env: dict[str, str], moment: Moment | None) -> dict[str, str]:
    """``env`` for a subprocess that should live at ``moment`` too (libfaketime: the clock
    starts there and goes on; the monotonic clock is left alone); ``env`` itself when no
    moment is pinned."""
    if moment is None:
        return env
    library = _libfaketime()
    if library is None:
        raise RuntimeError("the calendar guard needs libfaketime (apt-get install libfaketime)")
    preload = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    return {
        **env,
        "LD_PRELOAD": preload,
        "FAKETIME": f"@{moment.local:%Y-%m-%d %H:%M:%S}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_DONT_RESET": "1",
        "TZ": moment.zone,
    }
