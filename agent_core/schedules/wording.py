"""Schedules in words: "every weekday 9:00", the next runs in the owner's time zone, "ran 40
min late". Plain text; the channels escape it when they render it."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from agent_core.schedules.recurrence import DAY_NAMES, Recurrence


def clock(hour: int, minute: int) -> str:
    """``9:00``, ``21:30``.

    >>> clock(9, 0), clock(21, 30)
    ('9:00', '21:30')
    """
    return f"{hour}:{minute:02d}"


def _days(days: Sequence[int]) -> str:
    names = [DAY_NAMES[day] for day in days]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def describe(recurrence: Recurrence, *, zone: bool = False) -> str:
    """How a schedule reads in a confirmation and under each answer; ``zone`` adds its
    time zone.

    >>> describe(Recurrence(frequency="weekdays", hour=9))
    'every weekday 9:00'
    >>> describe(Recurrence(frequency="weekly", days=(0, 3), hour=8, minute=30), zone=True)
    'every Monday and Thursday 8:30 (UTC)'
    >>> describe(Recurrence(frequency="hours", every=4, hour=2, minute=30))
    'every 4 hours from 2:30'
    """
    at = clock(recurrence.hour, recurrence.minute)
    match recurrence.frequency:
        case "daily":
            text = f"every day {at}"
        case "weekdays":
            text = f"every weekday {at}"
        case "weekly":
            text = f"every {_days(recurrence.days)} {at}"
        case "monthly":
            text = f"first of the month {at}"
        case "hours":
            every = "every hour" if recurrence.every == 1 else f"every {recurrence.every} hours"
            first = recurrence.hour % recurrence.every
            text = every if (first, recurrence.minute) == (0, 0) else f"{every} from {at}"
        case _:
            text = f"every {recurrence.every} minutes"
    return f"{text} ({recurrence.timezone})" if zone else text


def when(instant: dt.datetime, timezone: str) -> str:
    """A run time as the owner reads it: ``Mon 10 Mar 9:00``.

    >>> when(dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC), "Europe/Paris")
    'Mon 10 Mar 9:00'
    """
    local = instant.astimezone(ZoneInfo(timezone))
    return f"{local:%a} {local.day} {local:%b} {clock(local.hour, local.minute)}"


def next_runs(
    recurrence: Recurrence, now: dt.datetime, owner_timezone: str, *, count: int = 3
) -> list[str]:
    """The next ``count`` runs in the owner's time zone (with the schedule's own when it
    differs).

    >>> weekly = Recurrence(frequency="weekly", days=(0,), hour=9, timezone="America/New_York")
    >>> next_runs(weekly, dt.datetime(2025, 3, 5, tzinfo=dt.UTC), "Europe/Paris", count=1)
    ['Mon 10 Mar 14:00 (9:00 in America/New_York)']
    """
    runs = []
    for instant in recurrence.after(now, count):
        text = when(instant, owner_timezone)
        if recurrence.timezone != owner_timezone:
            local = instant.astimezone(recurrence.zone)
            text += f" ({clock(local.hour, local.minute)} in {recurrence.timezone})"
        runs.append(text)
    return runs


def lateness(seconds: float) -> str:
    """How late a run was, rounded to what a reader cares about.

    >>> lateness(40 * 60), lateness(90), lateness(2 * 3600 + 600), lateness(3 * 86400)
    ('40 min', '2 min', '2 h 10 min', '3 days')
    """
    minutes = max(1, math.ceil(seconds / 60 - 1e-9))
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h" if rest == 0 else f"{hours} h {rest} min"
    return f"{round(hours / 24)} days"


def late_note(late_by: float, skipped: int) -> str:
    """What a late run says about itself.

    >>> late_note(2400, 0)
    'ran 40 min late'
    >>> late_note(600, 2)
    'ran 10 min late; 2 earlier runs were missed while Threadline was down'
    """
    note = f"ran {lateness(late_by)} late"
    if skipped:
        plural = "run was" if skipped == 1 else "runs were"
        note += f"; {skipped} earlier {plural} missed while Threadline was down"
    return note
