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


SHARED_PRIVATELY = (
    "This channel is shared with people outside the organisation, so the answer went to "
    "the person who asked, privately."
)
"""A place shared with another organisation (``shared_places = "private"``): the one line
the place reads; the answer itself goes to the asker alone."""

SHARED_REFUSED = (
    "This channel is shared with people outside the organisation, so I do not answer here; "
    "ask me in a direct message."
)
"""A place shared with another organisation (``shared_places = "refuse"``)."""

SCHEDULE_PRIVATELY = (
    "This channel is now shared with people outside the organisation, so this scheduled "
    "answer came to you privately."
)
"""A schedule whose place became shared: told to its owner with the private answer."""


def closing_note(note: str) -> str:
    """How an answer cut short ends, after the text already shown (both channels)."""
    return f"\n\n_({note})_"
