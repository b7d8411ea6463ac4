"""What the schedule commands answer, as components every channel renders (cards with
buttons that send the next command). Text people or the model wrote is passed as is: the
channel's renderer escapes it at the last step, like any answer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from agent_core.components import CardComponent, SimpleTextComponent, UiComponent
from agent_core.components.text import StatusLevel
from agent_core.schedules.alerts import AlertCheck
from agent_core.schedules.grammar import EXAMPLES
from agent_core.schedules.model import Schedule
from agent_core.schedules.wording import next_runs, when

MAX_LISTED = 50


def card(
    title: str,
    text: str,
    status: StatusLevel = "info",
    *,
    actions: Sequence[tuple[str, str]] = (),
    private: bool = False,
) -> UiComponent:
    """A card with ``(label, command)`` buttons; ``private``: for the asker alone.

    >>> card("Paused", "`5e1f0c2a` is paused.").rich_component.title
    'Paused'
    """
    return UiComponent(
        rich_component=CardComponent(
            title=title,
            content=text,
            status=status,
            markdown=True,
            actions=[{"label": label, "action": command} for label, command in actions],
        ),
        simple_component=SimpleTextComponent(text=f"{title}\n{text}"),
        audience="requester" if private else "everyone",
    )


def _sql(text: str) -> str:
    """SQL in a code block (a fence inside it cannot close the block early)."""
    return "```\n" + text.replace("```", "'''") + "\n```"


def confirmation(schedule: Schedule, now: dt.datetime, owner_timezone: str) -> UiComponent:
    """The reply to ``/schedule``: what will run, when (the next three runs in the owner's
    time zone), and the buttons to pause or remove it."""
    runs = ", ".join(next_runs(schedule.recurrence, now, owner_timezone))
    lines = [
        f"`{schedule.id}` · {schedule.describe(zone=True)}",
        f"*Question:* {schedule.question}",
        f"*Next runs:* {runs} (your time, {owner_timezone})",
        "It posts here, as you: your access to data applies at each run.",
    ]
    actions = [("Pause", f"/pause {schedule.id}"), ("Remove", f"/unschedule {schedule.id}")]
    return card("Scheduled", "\n".join(lines), "success", actions=actions)


def alert_draft(
    schedule: Schedule, check: AlertCheck, now: dt.datetime, owner_timezone: str
) -> UiComponent:
    """The reply to an alert: the query and condition the model wrote, what they find now,
    and Confirm / Cancel (nothing runs before the owner confirms)."""
    rule = schedule.alert
    assert rule is not None
    value = "no rows" if check.value is None and not check.rows else f"{check.value:g}"
    if check.value is None and check.rows:
        value = f"{check.rows} rows"
    runs = ", ".join(next_runs(schedule.recurrence, now, owner_timezone))
    lines = [
        f"`{schedule.id}` · checks {schedule.describe(zone=True)}",
        f"*When:* {rule.condition}",
        f"*Fires when:* {rule.describe()} (now: {value}, so it "
        f"{'holds' if check.holds else 'does not hold'})",
        "*Query* (run read-only, as you, at each check; no model call):",
        _sql(rule.sql),
        f"*First checks:* {runs} (your time, {owner_timezone})",
        "I post only when the condition becomes true (and again only after it was false).",
    ]
    actions = [("Confirm", f"/resume {schedule.id}"), ("Cancel", f"/unschedule {schedule.id}")]
    return card("Confirm this alert", "\n".join(lines), "warning", actions=actions)


def made_before(schedule: Schedule, now: dt.datetime, owner_timezone: str) -> UiComponent:
    """The reply to a ``/schedule`` whose turn ran again after a crash: the schedule it made
    the first time (an alert still waiting for its Confirm)."""
    if schedule.status != "draft" or schedule.alert is None:
        return confirmation(schedule, now, owner_timezone)
    lines = [
        f"`{schedule.id}` · checks {schedule.describe(zone=True)}",
        f"*Fires when:* {schedule.alert.describe()}",
        _sql(schedule.alert.sql),
    ]
    actions = [("Confirm", f"/resume {schedule.id}"), ("Cancel", f"/unschedule {schedule.id}")]
    return card("Confirm this alert", "\n".join(lines), "warning", actions=actions)


def listing(schedules: Sequence[Schedule], owner_timezone: str, *, everyone: bool) -> UiComponent:
    """``/schedules``: one line each (the owner's name too when listing the workspace's),
    shown to the asker alone."""
    if not schedules:
        text = "No schedules yet. Make one with " + EXAMPLES[0] + "."
        return card("Schedules", text, private=True)
    lines = [_line(s, owner_timezone, everyone=everyone) for s in schedules[:MAX_LISTED]]
    if len(schedules) > MAX_LISTED:
        lines.append(f"…and {len(schedules) - MAX_LISTED} more.")
    title = "Schedules in this workspace" if everyone else "Your schedules"
    return card(title, "\n".join(lines), private=True)


def _line(schedule: Schedule, owner_timezone: str, *, everyone: bool) -> str:
    kind = "alert" if schedule.is_alert else "question"
    who = f" · @{schedule.owner_name or schedule.owner}" if everyone else ""
    match schedule.status:
        case "active":
            state = f"next {when(schedule.due_at, owner_timezone)}"
        case "draft":
            state = "waiting for confirmation"
        case _:
            state = f"paused: {schedule.paused_reason or 'by its owner'}"
    return (
        f"• `{schedule.id}` {schedule.describe()} · {kind}: {schedule.question[:80]}{who} · {state}"
    )


def usage(command: str) -> UiComponent:
    """How to use a command typed without what it needs."""
    if command == "schedule":
        text = "Write when, then the question:\n" + "\n".join(f"• {e}" for e in EXAMPLES)
    else:
        text = f"Write `/{command} <id>` with the id `/schedules` lists."
    return card(f"/{command}", text, "warning", private=True)
