"""The schedule grammar: what it reads, and what it refuses plainly (with examples)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.schedules.grammar import (
    EXAMPLES,
    MAX_TEXT,
    ScheduleParseError,
    looks_like_schedule,
    parse_schedule,
)


def read(text: str, **options: object) -> tuple[object, ...]:
    request = parse_schedule(text, timezone="Europe/London", **options)  # type: ignore[arg-type]
    r = request.recurrence
    return (r.frequency, r.days, r.every, r.hour, r.minute, r.timezone, request.question)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "every weekday 9:00 revenue yesterday by region",
            ("weekdays", (), 1, 9, 0, "Europe/London", "revenue yesterday by region"),
        ),
        ("every day at 17:45 stock", ("daily", (), 1, 17, 45, "Europe/London", "stock")),
        ("daily 6am stock", ("daily", (), 1, 6, 0, "Europe/London", "stock")),
        ("every Monday 9am: signups", ("weekly", (0,), 1, 9, 0, "Europe/London", "signups")),
        (
            "every Mon, Wed & Fri at 8:15 pm in America/New_York - churn",
            ("weekly", (0, 2, 4), 1, 20, 15, "America/New_York", "churn"),
        ),
        (
            "every tuesday and thursday 12pm in Paris: x",
            ("weekly", (1, 3), 1, 12, 0, "Europe/Paris", "x"),
        ),
        ("every sunday midnight backups", ("weekly", (6,), 1, 0, 0, "Europe/London", "backups")),
        ("first of the month 8:00 revenue", ("monthly", (), 1, 8, 0, "Europe/London", "revenue")),
        ("on the 1st of every month at noon x", ("monthly", (), 1, 12, 0, "Europe/London", "x")),
        ("every month 7:30 x", ("monthly", (), 1, 7, 30, "Europe/London", "x")),
        ("every hour top orders", ("hours", (), 1, 0, 0, "Europe/London", "top orders")),
        ("hourly 5 biggest orders", ("hours", (), 1, 0, 0, "Europe/London", "5 biggest orders")),
        ("every 2 hours at 9:30 x", ("hours", (), 2, 9, 30, "Europe/London", "x")),
        ("every 60 minutes x", ("hours", (), 1, 0, 0, "Europe/London", "x")),
        ("every 30 minutes x", ("minutes", (), 30, 0, 0, "Europe/London", "x")),
        ("every day 9:00 in UTC x", ("daily", (), 1, 9, 0, "UTC", "x")),
        (
            "every day 9:00 in New York x",
            ("daily", (), 1, 9, 0, "America/New_York", "x"),
        ),
        (
            "every day 9:00 in the sales channel how many",
            ("daily", (), 1, 9, 0, "Europe/London", "in the sales channel how many"),
        ),
    ],
)
def test_schedules_people_write(text: str, expected: tuple[object, ...]) -> None:
    assert read(text) == expected


def test_when_makes_an_alert() -> None:
    for text in (
        "every hour when orders today drop below 100",
        "every hour alert me when orders today drop below 100",
        "every hour tell me if orders today drop below 100",
    ):
        request = parse_schedule(text, timezone="UTC")
        assert request.kind == "alert"
        assert request.condition == "orders today drop below 100"
    assert parse_schedule("every hour orders when?", timezone="UTC").kind == "question"


@pytest.mark.parametrize(
    ("text", "problem", "says"),
    [
        ("revenue every day", "unreadable", "how often"),
        ("every weekend 9:00 x", "unreadable", "how often"),
        ("every weekday revenue", "ambiguous", "At what time"),
        ("every weekday 9 revenue", "ambiguous", "morning or the evening"),
        ("every weekday at 9 revenue", "ambiguous", "morning or the evening"),
        ("every day at nine x", "unreadable", "could not read the time"),
        ("every day 25:00 x", "unreadable", "not a time"),
        ("every day 9:61 x", "unreadable", "not a time"),
        ("every day 13pm x", "unreadable", "not a time"),
        ("every day 9:00 in EST x", "ambiguous", "America/New_York"),
        ("every day 9:00 in IST x", "ambiguous", "Asia/Kolkata"),
        ("every day 9:00 in Mars/Olympus x", "unreadable", "time zone Mars/Olympus"),
        ("every minute x", "too_frequent", "minimum of every 15 minutes"),
        ("every 1 minute x", "too_frequent", "minimum of every 15 minutes"),
        ("every 10 minutes x", "too_frequent", "minimum"),
        ("every 45 minutes x", "ambiguous", "divide the hour"),
        ("every 5 hours x", "ambiguous", "divide the day"),
        ("every 0 hours x", "ambiguous", "divide the day"),
        ("every 15 minutes at 9:00 x", "ambiguous", "runs all day"),
        ("every day 9:00", "no_question", "What should I ask"),
        ("every day 9:00 " + "x" * MAX_TEXT, "too_long", "too long"),
    ],
)
def test_unreadable_and_ambiguous_schedules_are_refused_with_examples(
    text: str, problem: str, says: str
) -> None:
    with pytest.raises(ScheduleParseError) as refused:
        parse_schedule(text, timezone="UTC")
    assert refused.value.problem == problem
    assert says in refused.value.reason
    assert EXAMPLES[0] in str(refused.value)


def test_the_minimum_interval_is_the_settings() -> None:
    assert read("every 15 minutes x")[2] == 15
    with pytest.raises(ScheduleParseError, match="every 30 minutes"):
        parse_schedule("every 15 minutes x", timezone="UTC", min_interval=1800)
    with pytest.raises(ScheduleParseError, match="minimum of every 180 minutes"):
        parse_schedule("every 2 hours x", timezone="UTC", min_interval=3 * 3600)


def test_a_mention_needs_the_colon() -> None:
    assert looks_like_schedule("every Monday 9am: signups last week")
    assert looks_like_schedule("Daily 8:00 in Europe/Paris: churn")
    assert not looks_like_schedule("every day how many orders do we get?")
    assert not looks_like_schedule("what did we sell every monday: a list please")
    assert read("every Monday 9am: signups", mention=True)[-1] == "signups"
    with pytest.raises(ScheduleParseError, match="colon"):
        parse_schedule("every Monday 9am signups: x", timezone="UTC", mention=True)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_read_or_refused_plainly(text: str) -> None:
    try:
        request = parse_schedule(text, timezone="UTC")
    except ScheduleParseError as refused:
        assert refused.reason
    else:
        assert request.question.strip()


words = st.sampled_from(
    [
        "every",
        "day",
        "weekday",
        "monday",
        "fri",
        "and",
        ",",
        "at",
        "9",
        "9:00",
        "9am",
        "in",
        "Europe/Paris",
        "EST",
        "hours",
        "2",
        "15",
        "minutes",
        "when",
        "first",
        "of",
        "the",
        "month",
        ":",
        "revenue",
        "noon",
        "utc",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(words, max_size=12))
def test_near_miss_schedules_are_read_or_refused_plainly(parts: list[str]) -> None:
    text = " ".join(parts)
    for mention in (False, True):
        try:
            request = parse_schedule(text, timezone="UTC", mention=mention)
        except ScheduleParseError as refused:
            assert refused.reason
        else:
            assert request.recurrence.nominal_interval >= 900
