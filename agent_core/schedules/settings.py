"""``ScheduleSettings``: the ``[schedules]`` table of ``threadline.toml`` (or the environment)."""

from __future__ import annotations

from pydantic import Field

from agent_core.schedules.store import ScheduleLimits
from agent_core.settings import Section, env


class ScheduleSettings(Section):
    """Whether people may schedule questions and alerts, and the limits.

    >>> settings = ScheduleSettings.from_env({"THREADLINE_SCHEDULE_MIN_INTERVAL": "30"})
    >>> settings.min_interval, settings.limits.per_person
    (1800.0, 25)
    """

    table = "schedules"

    enabled: bool = Field(True, validation_alias=env("enabled", "THREADLINE_SCHEDULES"))
    """Offer ``/schedule`` (off: the commands say schedules are off; none run)."""
    min_interval_minutes: float = Field(
        15.0, ge=5.0, validation_alias=env("min_interval", "THREADLINE_SCHEDULE_MIN_INTERVAL")
    )
    """The most often a schedule may run, in minutes (at least 5: every minute is refused)."""
    per_person: int = Field(
        25, ge=1, validation_alias=env("per_person", "THREADLINE_SCHEDULES_PER_PERSON")
    )
    """Schedules one person may have (alerts waiting for confirmation count)."""
    per_workspace: int = Field(
        500, ge=1, validation_alias=env("per_workspace", "THREADLINE_SCHEDULES_PER_WORKSPACE")
    )
    """Schedules one Slack workspace or Teams tenant may have."""
    late_after: float = Field(
        120.0, gt=0, validation_alias=env("late_after", "THREADLINE_SCHEDULE_LATE_AFTER")
    )
    """Seconds after its time a run says how late it ran (after downtime)."""
    poll: float = Field(30.0, gt=0, validation_alias=env("poll", "THREADLINE_SCHEDULE_POLL"))
    """Most seconds the dispatcher sleeps between looks (it wakes for the next run anyway)."""

    @property
    def min_interval(self) -> float:
        """The minimum interval in seconds."""
        return self.min_interval_minutes * 60

    @property
    def limits(self) -> ScheduleLimits:
        return ScheduleLimits(per_person=self.per_person, per_workspace=self.per_workspace)
