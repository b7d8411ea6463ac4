"""The schedule commands as people type them, read into a ``ScheduleCommand``.

::

    /schedule <schedule> <question>      make one (see agent_core.schedules.grammar)
    @Threadline every Monday 9am: ...     the same, in a mention (a colon ends the schedule)
    /schedules                            yours (admins: every schedule of the workspace)
    /schedules pause-all | resume-all     admins: stop (and restart) every schedule here
    /unschedule <id>                      remove one
    /pause <id>   /resume <id>            pause one, run it again (an alert: confirm it)
    /schedule run <id>                    run one once now (its next run stays as it was)

The same under the one name Slack registers: ``/schedule list``, ``/schedule remove <id>``,
``/schedule pause <id>``, ``/schedule resume <id>``, ``/schedule pause-all``; "run now" has
only this form (``/schedule run <id>``), so it takes no slash command name of its own.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent_core.schedules.grammar import looks_like_schedule

Action = Literal[
    "schedule",
    "list",
    "unschedule",
    "pause",
    "resume",
    "run",
    "pause_all",
    "resume_all",
    "usage",
]

_SLASH = re.compile(r"/(schedules?|unschedule|pause|resume)(?:\s+(.*))?", re.IGNORECASE | re.DOTALL)
_ID = re.compile(r"`?([0-9a-fA-F]{8})`?")
COMMANDS = ("/schedule", "/schedules", "/unschedule", "/pause", "/resume")
_BY_ID: dict[str, Action] = {"unschedule": "unschedule", "pause": "pause", "resume": "resume"}


class ScheduleCommand(BaseModel):
    """One schedule command: what to do and its argument (the schedule text, or an id).

    >>> parse_command("/unschedule 5e1f0c2a")
    ScheduleCommand(action='unschedule', argument='5e1f0c2a', mention=False)
    >>> parse_command("/schedule run `5E1F0C2A`").action, parse_command("/schedule run").action
    ('run', 'usage')
    >>> parse_command("every Monday 9am: signups last week").mention
    True
    >>> parse_command("how many orders today?") is None
    True
    """

    model_config = ConfigDict(frozen=True)

    action: Action
    argument: str = ""
    mention: bool = False


def parse_command(text: str) -> ScheduleCommand | None:
    """The schedule command ``text`` is (a slash command, or a mention that starts with a
    schedule and a colon); None for anything else."""
    stripped = text.strip()
    found = _SLASH.fullmatch(stripped)
    if found is None:
        if looks_like_schedule(stripped):
            return ScheduleCommand(action="schedule", argument=stripped, mention=True)
        return None
    name, argument = found.group(1).lower(), (found.group(2) or "").strip()
    match name:
        case "schedule":
            if not argument:
                return ScheduleCommand(action="usage", argument="schedule")
            if (sub := _subcommand(argument)) is not None:
                return sub
            return ScheduleCommand(action="schedule", argument=argument)
        case "schedules":
            return _listing(argument)
    identifier = _ID.fullmatch(argument)
    if identifier is None:
        return ScheduleCommand(action="usage", argument=name)
    return ScheduleCommand(action=_BY_ID[name], argument=identifier.group(1).lower())


_SUBCOMMANDS = {
    "unschedule": "unschedule",
    "remove": "unschedule",
    "delete": "unschedule",
    "pause": "pause",
    "resume": "resume",
}


def _subcommand(argument: str) -> ScheduleCommand | None:
    """``/schedule list``, ``/schedule remove <id>``...: the other commands under one name
    (Slack registers one slash command, ``/schedule``; the rest work in a mention too)."""
    word, _, rest = argument.partition(" ")
    word = word.lower()
    if word in ("run", "run-now"):  # "/schedule run the report every Monday" stays a schedule
        if not rest.strip():
            return ScheduleCommand(action="usage", argument="schedule run")
        if (identifier := _ID.fullmatch(rest.strip())) is not None:
            return ScheduleCommand(action="run", argument=identifier.group(1).lower())
        return None
    if word in ("list", "pause-all", "resume-all"):
        return _listing(word if word != "list" else "")
    if word not in _SUBCOMMANDS:
        return None
    return parse_command(f"/{_SUBCOMMANDS[word]} {rest}")


def _listing(argument: str) -> ScheduleCommand:
    word = argument.lower().replace(" ", "-")
    if word in ("pause-all", "resume-all"):
        return ScheduleCommand(action="pause_all" if word == "pause-all" else "resume_all")
    return ScheduleCommand(action="list")
