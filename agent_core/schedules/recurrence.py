"""``Recurrence``: when a schedule runs, as wall-clock times in one time zone.

The times are a ``python-dateutil`` ``rrule`` over the zone's wall clock, turned into
instants (UTC) one by one. Daylight saving time, as RFC 5545 (iCalendar) says:

- a wall-clock time that does not exist that day (clocks jump forward over it) runs at the
  same distance after the jump: 02:30 on the night clocks go from 02:00 to 03:00 runs at
  03:30 (the offset before the jump is used);
- a wall-clock time that happens twice (clocks go back) runs once, the first time;
- two wall-clock times that land on the same instant (every 15 minutes across a jump) run
  once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from functools import cache, cached_property, lru_cache
from typing import Literal, NamedTuple
from zoneinfo import ZoneInfo, available_timezones

from dateutil import rrule
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Frequency = Literal["daily", "weekdays", "weekly", "monthly", "hours", "minutes"]

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_RULE_DAYS = (rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU)
_LOOK_BACK = dt.timedelta(hours=3)
"""How far before an instant's wall-clock time the search starts: a time skipped by a DST
jump runs up to the jump's length (at most 2 hours anywhere) after its wall-clock time."""


@cache
def known_zones() -> frozenset[str]:
    """The IANA time zone names this system knows (``zoneinfo.available_timezones``)."""
    return frozenset(available_timezones())


class CatchUp(NamedTuple):
    """Where a schedule stands at ``now``: the run to make, how many it stands for, the next.

    >>> day = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    >>> CatchUp(day, 0, day + dt.timedelta(days=1)).missed
    0
    """

    latest: dt.datetime
    missed: int
    following: dt.datetime


class Recurrence(BaseModel):
    """When a schedule runs: a frequency, a wall-clock time and a time zone.

    ``days`` are weekday numbers (0 = Monday) for ``weekly``; ``every`` is N for ``hours``
    and ``minutes``, which run at ``hour:minute`` and every N after it, each day (the
    count starts again at the first one after midnight).

    >>> weekday = Recurrence(frequency="weekdays", hour=9, timezone="Europe/Paris")
    >>> friday_noon = dt.datetime(2025, 3, 7, 11, 0, tzinfo=dt.UTC)
    >>> [t.isoformat() for t in weekday.after(friday_noon, 2)]
    ['2025-03-10T08:00:00+00:00', '2025-03-11T08:00:00+00:00']
    """

    model_config = ConfigDict(frozen=True)

    frequency: Frequency
    days: tuple[int, ...] = ()
    every: int = Field(1, ge=1, le=59)
    hour: int = Field(0, ge=0, le=23)
    minute: int = Field(0, ge=0, le=59)
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        if name not in known_zones():
            raise ValueError(f"unknown time zone {name!r}")
        return name

    @model_validator(mode="after")
    def _days_for_weekly(self) -> Recurrence:
        if self.frequency == "weekly" and not self.days:
            raise ValueError("a weekly schedule needs at least one day")
        if any(not 0 <= day <= 6 for day in self.days):
            raise ValueError("days are 0 (Monday) to 6 (Sunday)")
        return self

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def nominal_interval(self) -> float:
        """Seconds between two runs on an ordinary day (the minimum-interval check).

        >>> Recurrence(frequency="minutes", every=15).nominal_interval
        900.0
        """
        match self.frequency:
            case "minutes":
                return 60.0 * self.every
            case "hours":
                return 3600.0 * self.every
            case _:
                return 86400.0

    def _rule(self, start: dt.datetime) -> rrule.rrule:
        """The wall-clock times from ``start`` (naive, in the zone)."""
        return _rule(self, start)

    def instants(self, after: dt.datetime) -> Iterator[dt.datetime]:
        """Every run strictly after ``after`` (aware), in order, as UTC instants."""
        local = after.astimezone(self.zone).replace(tzinfo=None) - _LOOK_BACK
        start = local.replace(second=0, microsecond=0)
        last: dt.datetime | None = None
        for wall in self._rule(start):
            # fold=0: a repeated time is its first instance; a skipped one uses the offset
            # from before the jump (RFC 5545)
            instant = wall.replace(tzinfo=self.zone).astimezone(dt.UTC)
            if instant <= after or (last is not None and instant <= last):
                continue
            last = instant
            yield instant

    def after(self, instant: dt.datetime, count: int = 1) -> list[dt.datetime]:
        """The next ``count`` runs strictly after ``instant``."""
        found: list[dt.datetime] = []
        for run in self.instants(instant):
            found.append(run)
            if len(found) >= count:
                break
        return found

    def next_after(self, instant: dt.datetime) -> dt.datetime:
        """The first run strictly after ``instant``."""
        return next(self.instants(instant))

    def catch_up(self, due: dt.datetime, now: dt.datetime, *, cap: int = 1000) -> CatchUp:
        """For a run ``due`` at or before ``now``: the latest run at or before ``now``, how
        many earlier ones it stands for (at most ``cap``; downtime runs a schedule once, not
        once per run it missed), and the first run after ``now``.

        >>> hourly = Recurrence(frequency="hours", every=1)
        >>> ten = dt.datetime(2025, 1, 1, 10, tzinfo=dt.UTC)
        >>> late = hourly.catch_up(ten, ten + dt.timedelta(hours=2, minutes=10))
        >>> late.latest.hour, late.missed, late.following.hour
        (12, 2, 13)
        """
        latest, missed = due, 0
        for run in self.instants(due):
            if run > now:
                return CatchUp(latest, missed, run)
            if missed >= cap:
                break
            latest, missed = run, missed + 1
        # a long outage: count no further; the run stands for the latest one before now
        window = dt.timedelta(days=32 if self.frequency == "monthly" else 8)
        for run in self.instants(now - window):
            if run > now:
                return CatchUp(latest, missed, run)
            latest = run
        raise AssertionError("a recurrence always has a run after now")


@lru_cache(maxsize=512)
def _rule(recurrence: Recurrence, start: dt.datetime) -> rrule.rrule:
    """The wall-clock times of ``recurrence`` from ``start`` (naive, in its zone). Kept: a
    burst of schedules due at one time mostly shares a recurrence, and building the rule
    costs more than walking it."""
    frequency: Literal[1, 2, 3] = rrule.DAILY  # MONTHLY, WEEKLY, DAILY
    days: tuple[rrule.weekday, ...] | None = None
    monthday: int | None = None
    hours: tuple[int, ...] = (recurrence.hour,)
    minutes: tuple[int, ...] = (recurrence.minute,)
    match recurrence.frequency:
        case "weekdays":
            days = _RULE_DAYS[:5]
        case "weekly":
            frequency, days = rrule.WEEKLY, tuple(_RULE_DAYS[d] for d in recurrence.days)
        case "monthly":
            frequency, monthday = rrule.MONTHLY, 1
        case "hours":
            hours = tuple(range(recurrence.hour % recurrence.every, 24, recurrence.every))
        case "minutes":
            hours = tuple(range(24))
            minutes = tuple(range(recurrence.minute % recurrence.every, 60, recurrence.every))
    return rrule.rrule(
        frequency,
        dtstart=start,
        byweekday=days,
        bymonthday=monthday,
        byhour=hours,
        byminute=minutes,
        bysecond=0,
    )
