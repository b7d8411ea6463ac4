r"""What people are told when a turn cannot answer normally: one wording in every channel.

>>> STOPPED
'Stopped.'
>>> closing_note(STOPPED)
'\n\n_(Stopped.)_'
"""

from __future__ import annotations

from agent_core.errors import StateUnavailableError

STOPPED = "Stopped."
"""The user pressed Stop: the partial answer ends with this."""

INTERRUPTED = "I was interrupted while answering this and could not finish. Please ask again."
"""The servers answering this turn kept stopping (a crash, a deploy) before it finished."""

UNAVAILABLE = StateUnavailableError.public_message
"""Threadline's state (Redis) is unreachable: the question could not even be accepted."""


def closing_note(note: str) -> str:
    """How an answer cut short ends, after the text already shown (both channels)."""
    return f"\n\n_({note})_"
