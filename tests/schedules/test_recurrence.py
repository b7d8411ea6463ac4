"""``Recurrence``: run times in the zone's wall clock, and the documented DST behaviour."""

from __future__ import annotations

import datetime as dt
import itertools
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agent_core.schedules.recurrence import Recurrence

UTC = dt.UTC
PARIS = ZoneInfo("Europe/Paris")


def local(runs: list[dt.datetime], zone: str) -> list[str]:
    return [run.astimezone(ZoneInfo(zone)).strftime("%a %d %H:%M%z") for run in runs]


def test_weekdays_skip_the_weekend_in_the_owners_zone() -> None:
    weekday = Recurrence(frequency="weekdays", hour=9, timezone="Europe/Paris")
    friday_ten = dt.datetime(2025, 3, 7, 10, tzinfo=PARIS)
    assert local(weekday.after(friday_ten, 3), "Europe/Paris") == [
        "Mon 10 09:00+0100",
        "Tue 11 09:00+0100",
        "Wed 12 09:00+0100",
    ]


def test_weekly_days_monthly_and_hours() -> None:
    start = dt.datetime(2025, 1, 1, 12, tzinfo=UTC)  # a Wednesday
    weekly = Recurrence(frequency="weekly", days=(0, 3), hour=8, minute=30)
    assert local(weekly.after(start, 3), "UTC") == [
        "Thu 02 08:30+0000",
        "Mon 06 08:30+0000",
        "Thu 09 08:30+0000",
    ]
    monthly = Recurrence(frequency="monthly", hour=7)
    assert [r.date().isoformat() for r in monthly.after(start, 2)] == ["2025-02-01", "2025-03-01"]
    hours = Recurrence(frequency="hours", every=4, hour=2, minute=30)
    assert local(hours.after(start, 3), "UTC") == [
        "Wed 01 14:30+0000",
        "Wed 01 18:30+0000",
        "Wed 01 22:30+0000",
    ]


def test_a_time_skipped_by_dst_runs_after_the_jump() -> None:
    """02:30 does not exist in Paris on 30 March 2025 (02:00 -> 03:00): it runs at 03:30."""
    nightly = Recurrence(frequency="daily", hour=2, minute=30, timezone="Europe/Paris")
    runs = nightly.after(dt.datetime(2025, 3, 29, 12, tzinfo=UTC), 3)
    assert local(runs, "Europe/Paris") == [
        "Sun 30 03:30+0200",
        "Mon 31 02:30+0200",
        "Tue 01 02:30+0200",
    ]


def test_a_time_repeated_by_dst_runs_once_the_first_time() -> None:
    """02:30 happens twice in Paris on 26 October 2025: one run, at the first (CEST)."""
    nightly = Recurrence(frequency="daily", hour=2, minute=30, timezone="Europe/Paris")
    runs = nightly.after(dt.datetime(2025, 10, 25, 12, tzinfo=UTC), 2)
    assert local(runs, "Europe/Paris") == ["Sun 26 02:30+0200", "Mon 27 02:30+0100"]


def test_new_york_spring_forward() -> None:
    nightly = Recurrence(frequency="daily", hour=2, minute=15, timezone="America/New_York")
    (run,) = nightly.after(dt.datetime(2025, 3, 8, 12, tzinfo=UTC), 1)
    assert run.astimezone(ZoneInfo("America/New_York")).strftime("%d %H:%M") == "09 03:15"


def test_minutes_across_the_jump_run_once_per_instant() -> None:
    quarter = Recurrence(frequency="minutes", every=15, timezone="Europe/Paris")
    runs = quarter.after(dt.datetime(2025, 3, 30, 0, 30, tzinfo=UTC), 6)
    assert local(runs, "Europe/Paris") == [
        "Sun 30 01:45+0100",
        "Sun 30 03:00+0200",
        "Sun 30 03:15+0200",
        "Sun 30 03:30+0200",
        "Sun 30 03:45+0200",
        "Sun 30 04:00+0200",
    ]
    assert [b - a for a, b in itertools.pairwise(runs)] == [dt.timedelta(minutes=15)] * 5


def test_hours_across_the_fall_back_skip_the_repeated_hour() -> None:
    hourly = Recurrence(frequency="hours", every=1, timezone="Europe/Paris")
    runs = hourly.after(dt.datetime(2025, 10, 25, 22, 30, tzinfo=UTC), 4)
    assert local(runs, "Europe/Paris") == [
        "Sun 26 01:00+0200",
        "Sun 26 02:00+0200",
        "Sun 26 03:00+0100",
        "Sun 26 04:00+0100",
    ]


def test_missed_runs_collapse_into_the_latest() -> None:
    hourly = Recurrence(frequency="hours", every=1)
    ten = dt.datetime(2025, 1, 1, 10, tzinfo=UTC)
    assert hourly.catch_up(ten, ten) == (ten, 0, ten + dt.timedelta(hours=1))
    late = hourly.catch_up(ten, ten + dt.timedelta(hours=2, minutes=10))
    assert (late.latest.hour, late.missed, late.following.hour) == (12, 2, 13)
    quarter = Recurrence(frequency="minutes", every=15)
    month = ten + dt.timedelta(days=30)
    late = quarter.catch_up(ten, month, cap=100)
    assert late.missed == 100  # bounded work however long the outage
    assert late.latest == month and late.following == quarter.next_after(month)


def test_invalid_recurrences_are_refused() -> None:
    with pytest.raises(ValidationError, match="unknown time zone"):
        Recurrence(frequency="daily", timezone="Mars/Olympus")
    with pytest.raises(ValidationError, match="needs at least one day"):
        Recurrence(frequency="weekly")
    with pytest.raises(ValidationError, match="0 \\(Monday\\) to 6"):
        Recurrence(frequency="weekly", days=(7,))


ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


@st.composite
def recurrences(draw: st.DrawFn) -> Recurrence:
    frequency = draw(
        st.sampled_from(["daily", "weekdays", "weekly", "monthly", "hours", "minutes"])
    )
    every = 1
    if frequency == "hours":
        every = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12]))
    elif frequency == "minutes":
        every = draw(st.sampled_from([15, 20, 30]))
    days = tuple(sorted(draw(st.sets(st.integers(0, 6), min_size=1, max_size=7))))
    return Recurrence(
        frequency=frequency,
        days=days if frequency == "weekly" else (),
        every=every,
        hour=draw(st.integers(0, 23)),
        minute=draw(st.integers(0, 59)),
        timezone=draw(st.sampled_from(ZONES)),
    )


instants = st.datetimes(
    min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2035, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=300, deadline=None)
@given(recurrence=recurrences(), start=instants)
def test_runs_are_strictly_increasing_and_chain(recurrence: Recurrence, start: dt.datetime) -> None:
    runs = recurrence.after(start, 5)
    assert len(runs) == 5
    assert runs[0] > start
    assert all(a < b for a, b in itertools.pairwise(runs))
    for previous, following in itertools.pairwise(runs):
        assert recurrence.next_after(previous) == following
    for run in runs:  # on the wall clock, at the minute asked (a DST jump may move the hour)
        if recurrence.frequency != "minutes":
            wall = run.astimezone(recurrence.zone)
            assert wall.minute == recurrence.minute or recurrence.timezone == "Australia/Lord_Howe"


def reference_after(recurrence: Recurrence, start: dt.datetime, count: int) -> list[dt.datetime]:
    """The same runs found the slow way: every wall-clock time from three days before."""
    local = start.astimezone(recurrence.zone).replace(tzinfo=None) - dt.timedelta(days=3)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    found: list[dt.datetime] = []
    for wall in recurrence._rule(midnight):
        instant = wall.replace(tzinfo=recurrence.zone).astimezone(UTC)
        if instant > start and (not found or instant > found[-1]):
            found.append(instant)
        if len(found) == count:
            return found
    return found


@settings(max_examples=300, deadline=None)
@given(recurrence=recurrences(), start=instants)
def test_the_short_look_back_finds_what_the_slow_way_finds(
    recurrence: Recurrence, start: dt.datetime
) -> None:
    """Regression: the search starts 3 hours before the wall-clock time, not 2 days (800 µs
    a run for every-15-minutes schedules); it must miss nothing a DST jump moved later."""
    assert recurrence.after(start, 4) == reference_after(recurrence, start, 4)


def transitions(zone: str, year: int) -> list[dt.datetime]:
    """The instants ``zone`` changes its UTC offset in ``year`` (found hour by hour)."""
    tz, found = ZoneInfo(zone), []
    moment = dt.datetime(year, 1, 1, tzinfo=UTC)
    while moment.year == year:
        following = moment + dt.timedelta(hours=1)
        if moment.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
            found.append(following)
        moment = following
    return found


@pytest.mark.parametrize("zone", ["Europe/Paris", "Australia/Lord_Howe", "America/Santiago"])
def test_around_each_jump_nothing_is_missed(zone: str) -> None:
    jumps = transitions(zone, 2025)
    assert len(jumps) == 2
    for jump in jumps:
        local = jump.astimezone(ZoneInfo(zone))
        for minutes in range(-180, 181, 20):
            start = jump + dt.timedelta(minutes=minutes)
            for hour in {(local.hour + h) % 24 for h in (-2, -1, 0, 1)}:
                for minute in (0, 15, 30, 45):
                    nightly = Recurrence(frequency="daily", hour=hour, minute=minute, timezone=zone)
                    assert nightly.after(start, 2) == reference_after(nightly, start, 2)
            quarter = Recurrence(frequency="minutes", every=15, timezone=zone)
            assert quarter.after(start, 12) == reference_after(quarter, start, 12)
