"""Time zone names as people write them after "in": IANA names, UTC, or a tz database city.

Abbreviations such as EST or IST are refused: several mean different places (IST is India,
Ireland and Israel), and the tz database's EST, MST and HST never observe daylight saving
time, which is rarely what "9:00 EST" means in July.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from agent_core.errors import ThreadlineError
from agent_core.schedules.recurrence import known_zones

MISLEADING_ABBREVIATIONS = {
    "est": "America/New_York",
    "edt": "America/New_York",
    "et": "America/New_York",
    "cst": "America/Chicago or Asia/Shanghai",
    "cdt": "America/Chicago",
    "ct": "America/Chicago",
    "mst": "America/Denver or America/Phoenix",
    "mdt": "America/Denver",
    "pst": "America/Los_Angeles",
    "pdt": "America/Los_Angeles",
    "pt": "America/Los_Angeles",
    "hst": "Pacific/Honolulu",
    "ist": "Asia/Kolkata, Europe/Dublin or Asia/Jerusalem",
    "bst": "Europe/London",
    "cest": "Europe/Paris or Europe/Berlin",
    "aest": "Australia/Sydney or Australia/Brisbane",
    "aedt": "Australia/Sydney",
    "jst": "Asia/Tokyo",
    "sgt": "Asia/Singapore",
}
"""Abbreviations refused, with the zones people usually mean by them."""

_ALIASES = {"utc": "UTC", "gmt": "UTC", "z": "UTC"}


class AmbiguousZone(ThreadlineError, ValueError):
    """A time zone abbreviation that names several places or ignores daylight saving time.

    >>> str(AmbiguousZone("PST"))
    'PST is ambiguous or ignores daylight saving time: name the zone, e.g. America/Los_Angeles.'
    """

    def __init__(self, written: str) -> None:
        advice = MISLEADING_ABBREVIATIONS[written.lower()]
        super().__init__(
            f"{written} is ambiguous or ignores daylight saving time: name the zone, e.g. {advice}."
        )


@cache
def _lookup() -> dict[str, str]:
    """Lowercase written forms -> IANA names: every name, and each city that is unique."""
    names = {name.lower(): name for name in known_zones()}
    cities = Counter(name.rsplit("/", 1)[-1].lower() for name in known_zones() if "/" in name)
    for name in known_zones():
        city = name.rsplit("/", 1)[-1].lower()
        if "/" in name and cities[city] == 1:
            names.setdefault(city, name)
            names.setdefault(city.replace("_", " "), name)
    names.update(_ALIASES)
    return names


def resolve_zone(written: str) -> str | None:
    """The IANA name ``written`` means, ``None`` when it names no zone; raises
    ``AmbiguousZone`` for an abbreviation that misleads.

    >>> resolve_zone("europe/paris"), resolve_zone("New York"), resolve_zone("utc")
    ('Europe/Paris', 'America/New_York', 'UTC')
    >>> resolve_zone("the sales channel") is None
    True
    """
    key = " ".join(written.split()).lower()
    if key in MISLEADING_ABBREVIATIONS:
        raise AmbiguousZone(written)
    return _lookup().get(key)


def owner_zone(reported: str | None) -> str:
    """The zone a platform reports for a person (Slack ``tz``, Teams ``localTimezone``), or
    UTC when it reports none or one this system does not know.

    >>> owner_zone("Europe/Paris"), owner_zone(None), owner_zone("Mars/Olympus")
    ('Europe/Paris', 'UTC', 'UTC')
    """
    return reported if reported and reported in known_zones() else "UTC"
