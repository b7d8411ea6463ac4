"""The schedule grammar: "every weekday 9:00 revenue yesterday by region" -> a ``ScheduleRequest``.

::

    schedule   := recurrence [ ["at"] time ] [ "in" zone ] [":"] question
    recurrence := "every day" | "daily"
                | "every weekday" | "weekdays"
                | "every" day ["," | "and" day]...          (Monday .. Sunday, or Mon .. Sun)
                | "every hour" | "hourly" | "every" N "hours"     (N divides 24: 1 2 3 4 6 8 12)
                | "every minute" | "every" N "minutes"          (N divides 60; at least the
                                                               minimum interval, 15 by default)
                | "first of the month" | "every month" | "monthly"
    time       := 9:00 | 09:30 | 21:00 | 9am | 9:30 pm | noon | midnight
    zone       := Europe/Paris | UTC | a tz database city (Paris, New York)
    question   := anything; "when <condition>" (or "alert me when", "if") makes an alert

A day, weekday, weekly or monthly schedule needs a time ("every weekday" alone, or "9"
without ":00" or am/pm, is ambiguous). Hours run at ``time`` and every N hours from it,
each day; minutes run at :00 and every N minutes, all day, and take no time. Without "in",
the owner's time zone applies. In a mention the schedule ends with a colon ("@Threadline
every Monday 9am: last week's signups"), so an ordinary question that starts with "every"
stays a question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agent_core.errors import ValidationError
from agent_core.schedules.recurrence import DAY_NAMES, Frequency, Recurrence
from agent_core.schedules.zones import AmbiguousZone, resolve_zone

MAX_TEXT = 2000
"""Characters of a whole ``/schedule`` line (the question is asked again at every run)."""

EXAMPLES = (
    "`/schedule every weekday 9:00 revenue yesterday by region`",
    "`/schedule every Monday 9am in Europe/Paris: signups last week`",
    "`/schedule every 2 hours when orders today are below 100`",
    "`/schedule first of the month 8:00 revenue last month by country`",
)

ParseProblem = Literal["unreadable", "ambiguous", "too_frequent", "no_question", "too_long"]
Kind = Literal["question", "alert"]


class ScheduleParseError(ValidationError):
    """A schedule that could not be read, said plainly with examples; nothing is saved.

    >>> error = ScheduleParseError("ambiguous", "Is 9 in the morning or the evening?")
    >>> error.problem, str(error).splitlines()[0]
    ('ambiguous', 'Is 9 in the morning or the evening?')
    """

    def __init__(self, problem: ParseProblem, message: str) -> None:
        lines = [message, "", "For example:", *(f"• {example}" for example in EXAMPLES)]
        super().__init__("\n".join(lines))
        self.problem: ParseProblem = problem
        self.reason = message


@dataclass(frozen=True)
class ScheduleRequest:
    """What a ``/schedule`` line asks for: when, and what to ask (or watch for).

    >>> request = parse_schedule("every weekday 9:00 revenue yesterday", timezone="UTC")
    >>> request.recurrence.frequency, request.question, request.kind
    ('weekdays', 'revenue yesterday', 'question')
    """

    recurrence: Recurrence
    question: str
    kind: Kind = "question"
    condition: str | None = None
    """For an alert: the words after "when" (the agent turns them into SQL once)."""


_DAY = re.compile(
    r"(mon|tue|wed|thu|fri|sat|sun)[a-z]*\b",
    re.IGNORECASE,
)
_DAY_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s*&\s*)", re.IGNORECASE)
_EVERY = re.compile(r"(?:every|each)\s+", re.IGNORECASE)
_FIXED: tuple[tuple[re.Pattern[str], Frequency], ...] = (
    (re.compile(r"(?:(?:every|each)\s+day|daily)\b", re.IGNORECASE), "daily"),
    (
        re.compile(
            r"(?:(?:every|each)\s+(?:weekday|work\s*day|business\s+day)|(?:on\s+)?weekdays)\b",
            re.IGNORECASE,
        ),
        "weekdays",
    ),
    (
        re.compile(
            r"(?:(?:on\s+)?(?:the\s+)?(?:first|1st)\s+(?:day\s+)?of\s+(?:the|each|every)\s+month"
            r"|(?:every|each)\s+month|monthly)\b",
            re.IGNORECASE,
        ),
        "monthly",
    ),
    (re.compile(r"(?:(?:every|each)\s+hour|hourly)\b", re.IGNORECASE), "hours"),
    (re.compile(r"(?:every|each)\s+minute\b", re.IGNORECASE), "minutes"),
)
_COUNTED = re.compile(
    r"(?:every|each)\s+(\d{1,4})\s*(hours?|hrs?|h|minutes?|mins?|m)\b", re.IGNORECASE
)
_TIME = re.compile(
    r"(?:\s*,)?\s+(?:at\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?(?![a-z])"
    r"|(\d{1,2}):(\d{2})\b|(noon|midnight)\b)",
    re.IGNORECASE,
)
_BARE_HOUR = re.compile(r"(?:\s*,)?\s+(?:at\s+)?(\d{1,2})(?![\d:])\b", re.IGNORECASE)
_AT = re.compile(r"\s+at\b", re.IGNORECASE)
_ZONE = re.compile(r"\s+in\s+((?:[A-Za-z][\w+\-]*)(?:/[\w+\-]+)*(?:\s+[A-Za-z]+){0,2})")
_SEPARATOR = re.compile(r"\s*(?::|,|-|\u2013|\u2014)?\s*")  # dashes: en, em
_ALERT = re.compile(
    r"(?:(?:alert|tell|notify|ping)\s+(?:me\s+)?|let\s+me\s+know\s+)?(?:when|whenever|if)\s+(.+)",
    re.IGNORECASE | re.DOTALL,
)
_MENTION = re.compile(
    r"(?:every|each|daily|hourly|weekdays|monthly|on\s+weekdays|(?:on\s+)?(?:the\s+)?"
    r"(?:first|1st)\s+(?:day\s+)?of)\b[^:\n]{0,80}:",
    re.IGNORECASE,
)


@dataclass
class _Reading:
    """The line as it is read, left to right."""

    text: str
    at: int = 0

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        found = pattern.match(self.text, self.at)
        if found is not None:
            self.at = found.end()
        return found

    def peek(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        return pattern.match(self.text, self.at)

    @property
    def rest(self) -> str:
        return self.text[self.at :]


def looks_like_schedule(text: str) -> bool:
    """Whether a mention is a schedule: it starts like one and a colon ends the schedule.

    >>> looks_like_schedule("every Monday 9am: signups last week")
    True
    >>> looks_like_schedule("every day how many orders do we get?")
    False
    """
    return _MENTION.match(text.strip()) is not None


def parse_schedule(
    text: str, *, timezone: str, min_interval: float = 900.0, mention: bool = False
) -> ScheduleRequest:
    """Read a schedule (``/schedule``'s argument, or a mention's text with ``mention``);
    ``timezone`` is the owner's, used without "in". Raises ``ScheduleParseError``.

    >>> parse_schedule("every Monday 9am: signups", timezone="Europe/Paris").recurrence.days
    (0,)
    >>> parse_schedule("every minute ping", timezone="UTC")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agent_core.schedules.grammar.ScheduleParseError: Every 1 minute is more often than ...
    """
    line = " ".join(text.split())
    if len(line) > MAX_TEXT:
        raise ScheduleParseError(
            "too_long", f"That schedule is too long (at most {MAX_TEXT} characters)."
        )
    reading = _Reading(line)
    frequency, days, every = _recurrence(reading)
    hour, minute = _time(reading, frequency)
    zone = _zone(reading) or timezone
    separator = reading.take(_SEPARATOR)
    if mention and (separator is None or ":" not in separator.group(0)):
        raise ScheduleParseError("unreadable", "End the schedule with a colon, then the question.")
    recurrence = Recurrence(
        frequency=frequency, days=days, every=every, hour=hour, minute=minute, timezone=zone
    )
    _check_interval(recurrence, min_interval)
    return _request(recurrence, reading.rest.strip())


def _recurrence(reading: _Reading) -> tuple[Frequency, tuple[int, ...], int]:
    for pattern, frequency in _FIXED:
        if reading.take(pattern):
            return frequency, (), 1
    if counted := reading.take(_COUNTED):
        return _counted(int(counted.group(1)), counted.group(2).lower())
    start = reading.at
    if reading.take(_EVERY) and (days := _days(reading)):
        return "weekly", days, 1
    reading.at = start
    raise ScheduleParseError(
        "unreadable",
        "I could not tell how often to run it. Start with every day, every weekday, "
        "every Monday, every 2 hours, every 30 minutes or first of the month.",
    )


def _days(reading: _Reading) -> tuple[int, ...]:
    days: list[int] = []
    while day := reading.peek(_DAY):
        index = _day_index(day.group(0))
        if index is None:
            break
        reading.take(_DAY)
        days.append(index)
        joined = reading.peek(_DAY_JOIN)
        if joined is None or not _DAY.match(reading.text, joined.end()):
            break
        reading.take(_DAY_JOIN)
    return tuple(sorted(set(days)))


def _day_index(word: str) -> int | None:
    """0 for Monday, Mon, Mondays; None for a word that only starts like a day (Month)."""
    word = word.lower().rstrip("s")
    for index, name in enumerate(DAY_NAMES):
        full = name.lower()
        if word == full or (3 <= len(word) <= len(full) and full.startswith(word)):
            return index
    return None


_HOURS_DIVIDING_DAY = (1, 2, 3, 4, 6, 8, 12)
_MINUTES_DIVIDING_HOUR = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)


def _counted(count: int, unit: str) -> tuple[Frequency, tuple[int, ...], int]:
    if unit.startswith("h"):
        if count not in _HOURS_DIVIDING_DAY:
            raise ScheduleParseError(
                "ambiguous",
                f"Every {count} hours does not divide the day evenly: "
                "pick every 1, 2, 3, 4, 6, 8 or 12 hours.",
            )
        return "hours", (), count
    if count == 60:
        return "hours", (), 1
    if count not in _MINUTES_DIVIDING_HOUR:
        raise ScheduleParseError(
            "ambiguous",
            f"Every {count} minutes does not divide the hour evenly: "
            "pick every 15, 20 or 30 minutes (or every hour).",
        )
    return "minutes", (), count


def _time(reading: _Reading, frequency: Frequency) -> tuple[int, int]:
    found = reading.take(_TIME)
    if found is None and frequency in ("hours", "minutes"):
        return 0, 0  # optional: what follows is the question ("every hour 5 biggest orders")
    if found is None:
        if reading.peek(_BARE_HOUR) is not None:
            raise ScheduleParseError(
                "ambiguous",
                "Is that hour in the morning or the evening? Write 9:00, 9am or 21:00.",
            )
        if reading.peek(_AT) is not None:
            raise ScheduleParseError(
                "unreadable", "I could not read the time: write 9:00, 9am, 21:00 or noon."
            )
        raise ScheduleParseError(
            "ambiguous", "At what time? Add one, e.g. every weekday 9:00 or every Monday 9am."
        )
    if frequency == "minutes":
        raise ScheduleParseError(
            "ambiguous",
            "Every N minutes runs all day (at :00 and every N minutes after): "
            "leave out the time, or schedule every hour from a time.",
        )
    return _clock_time(found)


def _clock_time(found: re.Match[str]) -> tuple[int, int]:
    twelve_hour, minute_12, half, hour_24, minute_24, word = found.groups()
    if word is not None:
        return (12, 0) if word.lower() == "noon" else (0, 0)
    if twelve_hour is not None:
        hour, minute = int(twelve_hour), int(minute_12 or 0)
        if not 1 <= hour <= 12:
            raise ScheduleParseError("unreadable", f"{found.group(0).strip()} is not a time.")
        hour = hour % 12 + (12 if half.lower() == "p" else 0)
    else:
        hour, minute = int(hour_24), int(minute_24)
    if hour > 23 or minute > 59:
        raise ScheduleParseError("unreadable", f"{found.group(0).strip()} is not a time.")
    return hour, minute


def _zone(reading: _Reading) -> str | None:
    found = reading.peek(_ZONE)
    if found is None:
        return None
    words = found.group(1).split()
    for size in range(len(words), 0, -1):  # the longest name that is a zone ("New York")
        written = " ".join(words[:size])
        try:
            zone = resolve_zone(written)
        except AmbiguousZone as error:
            raise ScheduleParseError("ambiguous", str(error)) from None
        if zone is not None:
            reading.at = found.start(1) + len(written)
            return zone
    if "/" in words[0]:
        raise ScheduleParseError(
            "unreadable", f"I do not know the time zone {words[0]} (try Europe/Paris or UTC)."
        )
    return None  # "in the sales report ...": part of the question


def _check_interval(recurrence: Recurrence, min_interval: float) -> None:
    if recurrence.nominal_interval >= min_interval:
        return
    every = recurrence.every
    written = f"{every} minute{'s' if every != 1 else ''}"
    if recurrence.frequency == "hours":
        written = f"{every} hour{'s' if every != 1 else ''}"
    minimum = round(min_interval / 60)
    raise ScheduleParseError(
        "too_frequent",
        f"Every {written} is more often than the minimum of every {minimum} minutes.",
    )


def _request(recurrence: Recurrence, question: str) -> ScheduleRequest:
    if not question:
        raise ScheduleParseError(
            "no_question", "What should I ask each time? Add the question after the schedule."
        )
    alert = _ALERT.fullmatch(question)
    if alert is not None:
        return ScheduleRequest(recurrence, question, "alert", alert.group(1).strip())
    return ScheduleRequest(recurrence, question)
