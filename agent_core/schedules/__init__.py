"""Questions on a schedule, and alerts: channel-free.

::

    grammar      "/schedule every weekday 9:00 revenue yesterday" -> ScheduleRequest
    recurrence   when it runs (python-dateutil rrule over the zone's wall clock; DST rules)
    wording      "every weekday 9:00", the next runs, "ran 40 min late"
    model        Schedule, Place (where it posts), LastRun
    store*       ScheduleStore: memory, SQLite, Redis (caps, the claim, alert state, notices)
    dispatcher   due occurrences -> synthetic turns on the turn queue, once each
    runs         one run: the owner again, the alert's query (no model), the Ask the turn
                 host answers, pausing (with one notice) on trouble
    alerts       AlertRule: a read-only query and a condition, checked without the model
    authoring    the model writes an alert's rule once, tried as the owner
    commands     /schedule /schedules /unschedule /pause /resume, read
    handling     ... and run (ScheduleCommands); replies: the cards they answer with
    settings     [schedules] in threadline.toml; clock / testing: the injected time
"""

from agent_core.clock import Clock, SystemClock
from agent_core.schedules.alerts import AlertCheck, AlertRule, fires
from agent_core.schedules.authoring import AlertAuthor, AlertAuthoringError, AuthoredAlert
from agent_core.schedules.commands import ScheduleCommand, parse_command
from agent_core.schedules.dispatcher import DispatchReport, ScheduleDispatcher
from agent_core.schedules.grammar import ScheduleParseError, ScheduleRequest, parse_schedule
from agent_core.schedules.handling import Asker, ScheduleCommands
from agent_core.schedules.model import LastRun, Place, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.runs import (
    Ask,
    OwnerCheck,
    RunChecks,
    ScheduleRunner,
)
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.store import ScheduleLimitError, ScheduleLimits, ScheduleStore
from agent_core.schedules.store_memory import MemoryScheduleStore

__all__ = [
    "AlertAuthor",
    "AlertAuthoringError",
    "AlertCheck",
    "AlertRule",
    "Ask",
    "Asker",
    "AuthoredAlert",
    "Clock",
    "DispatchReport",
    "LastRun",
    "MemoryScheduleStore",
    "Occurrence",
    "OwnerCheck",
    "Place",
    "Recurrence",
    "RunChecks",
    "Schedule",
    "ScheduleCommand",
    "ScheduleCommands",
    "ScheduleDispatcher",
    "ScheduleLimitError",
    "ScheduleLimits",
    "ScheduleParseError",
    "ScheduleRequest",
    "ScheduleRunner",
    "ScheduleSettings",
    "ScheduleStore",
    "SystemClock",
    "fires",
    "parse_command",
    "parse_schedule",
]
