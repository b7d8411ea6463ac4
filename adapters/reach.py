"""Whether someone and somewhere can still be reached: what both channels' ``reach`` modules
answer when a scheduled run checks its owner and its place.

``Person.standing`` is ``active``, ``gone`` (left the workspace, deactivated, no longer in
the conversation: the platform says so) or ``unknown`` (the platform could not say now: an
outage is never taken for a departure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Standing = Literal["active", "gone", "unknown"]


@dataclass(frozen=True)
class Person:
    """One person as the platform describes them now.

    >>> Person("gone", reason="was deactivated").timezone is None
    True
    """

    standing: Standing
    timezone: str | None = None
    """Their IANA time zone when the platform says (Slack's ``tz``)."""
    name: str | None = None
    reason: str = ""
    """Why ``gone``, as a sentence's end ("was deactivated")."""
