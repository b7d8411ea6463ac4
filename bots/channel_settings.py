"""``ChannelSettings``: what every channel's bot is configured with, under the same names.

``[slack]`` and ``[teams]`` (``bots.slack.settings``, ``bots.teams.settings``) both start
from these, so a setting means the same in both tables::

    host, port          HOST / PORT                  where the HTTP server listens
    rate_limit          THREADLINE_RATE_LIMIT        per-user quota (``20/3600``, ``120/hour``)
    turn_concurrency    THREADLINE_TURN_CONCURRENCY  turns one process answers at once (64)
    turns_per_person    THREADLINE_TURNS_PER_PERSON  of them, one asker's at most (3); the
                                                     asker's others wait their turn, in order
    stream_interval     THREADLINE_STREAM_INTERVAL   seconds between streamed updates (1.0)
    stop_button_after   THREADLINE_STOP_BUTTON_AFTER seconds before a Stop button shows (3;
                                                     ``off``: never)
    dedupe_ttl          THREADLINE_DEDUPE_TTL        seconds a delivery id is remembered (3600)
    erase_on_uninstall  THREADLINE_ERASE_ON_UNINSTALL  false (default): an uninstall removes the
                                                     installation's tokens only; true: also erases
                                                     the workspace's people and schedules
                                                     (``bots.uninstall``; Slack only, see there)

The organisation's edge (README, "People from other organisations")::

    external_groups        THREADLINE_EXTERNAL_GROUPS   groups people of another organisation
                                                        get besides ``external`` (none: they
                                                        are told one sentence, nothing runs)
    shared_places          THREADLINE_SHARED_PLACES     a place shared with another
                                                        organisation: ``private`` (default:
                                                        the answer goes to the asker alone),
                                                        ``refuse`` or ``allow``
    shared_places_allowed  THREADLINE_SHARED_PLACES_ALLOWED  channel ids where sharing is
                                                        fine (answered as anywhere else)

A name a channel used before (``flush_interval``, ``concurrency``, ``TEAMS_CONCURRENCY``...)
is still read, with a deprecation line in the log (``Section.renamed``).

>>> ChannelSettings(stop_button_after="off").stop_button_after is None
True
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from agent_core.settings import CommaList, Section, env
from agent_core.state.quotas import RateLimit

SharedPlaces = Literal["private", "refuse", "allow"]
"""What a place shared with another organisation gets (``bots.places``)."""


class ChannelSettings(Section):
    """The settings every channel shares; see the module docstring."""

    host: str = Field("0.0.0.0", validation_alias=env("host", "HOST"))
    rate_limit: RateLimit = Field(None, validation_alias=env("rate_limit", "THREADLINE_RATE_LIMIT"))
    """``(messages, seconds)`` per user; ``None``: no quota. Admins are exempt."""
    turn_concurrency: int = Field(
        64, ge=1, validation_alias=env("turn_concurrency", "THREADLINE_TURN_CONCURRENCY")
    )
    turns_per_person: int = Field(
        3, ge=1, validation_alias=env("turns_per_person", "THREADLINE_TURNS_PER_PERSON")
    )
    """Turns of one asker a process answers at once; the asker's others wait, in order,
    without holding up anyone else's."""
    stream_interval: float = Field(
        1.0, ge=0, validation_alias=env("stream_interval", "THREADLINE_STREAM_INTERVAL")
    )
    """Seconds between two updates of a streamed answer (Teams allows one a second)."""
    stop_button_after: float | None = Field(
        3.0, ge=0, validation_alias=env("stop_button_after", "THREADLINE_STOP_BUTTON_AFTER")
    )
    """Seconds a turn runs before a Stop button is shown (short answers need none);
    ``off``: never."""
    dedupe_ttl: float = Field(
        3600.0, gt=0, validation_alias=env("dedupe_ttl", "THREADLINE_DEDUPE_TTL")
    )
    """Seconds a delivered event / activity id is remembered (a redelivery is dropped)."""
    erase_on_uninstall: bool = Field(
        False, validation_alias=env("erase_on_uninstall", "THREADLINE_ERASE_ON_UNINSTALL")
    )
    """When the app is uninstalled from a workspace (Slack ``app_uninstalled``, or its bot
    token revoked), also erase that workspace's people and schedules (``bots.uninstall``).
    Off by default: an erase cannot be undone, and an uninstall may be a mistake that a
    reinstall repairs."""
    external_groups: CommaList = Field(
        default_factory=list,
        validation_alias=env("external_groups", "THREADLINE_EXTERNAL_GROUPS"),
    )
    """Groups people of another organisation get besides ``external`` (granted like any
    group: tools' and profiles' groups, ``[database.roles]``); empty: nothing runs for them."""
    shared_places: SharedPlaces = Field(
        "private", validation_alias=env("shared_places", "THREADLINE_SHARED_PLACES")
    )
    """A place shared with another organisation: ``private`` answers the asker alone,
    ``refuse`` answers nothing there, ``allow`` answers as anywhere (a profile may say
    otherwise for its places)."""
    shared_places_allowed: CommaList = Field(
        default_factory=list,
        validation_alias=env("shared_places_allowed", "THREADLINE_SHARED_PLACES_ALLOWED"),
    )
    """Channel ids (Slack ``C...``, Teams channel or conversation ids) shared on purpose:
    answered as anywhere else."""

    @field_validator("stop_button_after", mode="before")
    @classmethod
    def _off(cls, value: object) -> object:
        return None if str(value).strip().lower() in ("off", "none") else value
