"""What both channels say on an approval message, and the click they read from it.

The agent yields an ``ApprovalComponent`` when a turn waits for approval, and a newer
version once it is decided; ``adapters.slack.approval`` draws it as a Block Kit message,
``adapters.teams.approval`` as an Adaptive Card, with the words from here so both say the
same thing. Names and arguments are data: each channel escapes them.

>>> from agent_core.components import ApprovalCallView, ApprovalComponent
>>> view = ApprovalComponent(approval_id="a1", calls=[ApprovalCallView(tool="refund")],
...                          asker="Ana", approvers="Ana", expires_at=0)
>>> headline(view), footer(view)
('Waiting for approval', 'Only Ana may approve · expires 00:00 UTC')
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from agent_core.components import ApprovalComponent

Decision = Literal["approve", "deny", "stop"]
DECISIONS: tuple[Decision, ...] = ("approve", "deny", "stop")
"""The buttons of an approval message: Approve and Deny for its approvers, Stop for its
asker (the request withdrawn: the turn ends)."""

MAX_CALLS_SHOWN = 10
"""Calls one approval message shows (the rest are counted)."""
ARGUMENT_CHARS = 2400
"""Characters of one call's arguments shown (cut with a note)."""

_HEADLINES = {
    "pending": "Waiting for approval",
    "approved": "Approved",
    "denied": "Denied",
    "expired": "Expired",
    "cancelled": "Stopped",
}


@dataclass(frozen=True, slots=True)
class ApprovalClick:
    """A click on an approval message's Approve, Deny or Stop, as the channel read it from
    the signed payload (who clicked comes from that payload too, never from here).

    >>> ApprovalClick("a1", "deny").decision
    'deny'
    """

    approval_id: str
    decision: Decision


def clock(timestamp: float | None) -> str:
    """``HH:MM UTC`` (every reader's clock differs; UTC says which one).

    >>> clock(3600)
    '01:00 UTC'
    """
    if timestamp is None:
        return ""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%H:%M UTC")


def headline(view: ApprovalComponent) -> str:
    return _HEADLINES[view.state]


def request_line(view: ApprovalComponent) -> str:
    """``Ana asks to run refund.`` (plain text: escape it for the channel)."""
    return f"{view.asker} asks to run {view.tools()}."


def footer(view: ApprovalComponent) -> str:
    """Who may approve and until when, or who decided and when (plain text)."""
    if view.pending:
        expires = f" · expires {clock(view.expires_at)}" if view.expires_at is not None else ""
        return f"Only {view.approvers} may approve{expires}"
    at = f" · {clock(view.decided_at)}" if view.decided_at is not None else ""
    return f"{view.outcome()}{at}"


def hidden_calls(view: ApprovalComponent) -> str | None:
    """``and 3 more calls`` when the message shows only the first ``MAX_CALLS_SHOWN``."""
    more = len(view.calls) - MAX_CALLS_SHOWN
    return f"and {more} more call{'s' if more > 1 else ''}" if more > 0 else None
