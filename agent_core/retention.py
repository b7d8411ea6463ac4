"""``[retention]``: how long each kind of data Threadline keeps is kept, and the sweep.

::

    [retention]
    conversations = 90     # days after a conversation's last message (the default)
    memories = 365         # days after a memory was made or last refreshed (the default)
    usage = 400            # days of the LLM usage ledger (the default)
    audit = "keep"         # the audit trail: always kept (its chain starts at record 1)
    schedules = "keep"     # until their owner removes them (or is erased)

A number is days; ``"keep"`` keeps forever. Conversations expire by themselves on Redis
(a TTL restarted at each write) and are hidden at once on SQLite; everything else older
than its setting goes when ``sweep`` runs (``threadline retention``, from cron or a
Kubernetes CronJob: every step is an idempotent delete of what is older than the cut-off,
so processes or runs that overlap do no harm). "Now" is the injected clock.

Kept for a fixed time and not set here (see the README's "Your data"): thread transcripts
and identity caches (their TTLs), approvals (a day after they expire), files shared with a
question (7 days idle), delivery dedupe keys (minutes).

>>> RetentionSettings().days("conversations"), RetentionSettings().days("audit")
(90.0, None)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.settings import Section, env

if TYPE_CHECKING:
    from agent_core.state.factory import State

Kept = float | Literal["keep"]
Kind = Literal["conversations", "memories", "usage", "audit", "schedules"]
DAY = 86400.0


class RetentionSettings(Section):
    """``[retention]`` (see the module docstring)."""

    table = "retention"

    conversations: Kept = Field(
        90.0, validation_alias=env("conversations", "THREADLINE_RETAIN_CONVERSATIONS")
    )
    """Days a conversation (the agent's history of a thread, per person) is kept after its
    last message; ``"keep"``: forever."""
    memories: Kept = Field(365.0, validation_alias=env("memories", "THREADLINE_RETAIN_MEMORIES"))
    """Days a memory (a question and the tool call that answered it; a note) is kept."""
    usage: Kept = Field(400.0, validation_alias=env("usage", "THREADLINE_RETAIN_USAGE"))
    """Days of the usage ledger (tokens and cost per person, profile, workspace, model)."""
    audit: Literal["keep"] = "keep"
    """The audit trail is kept whole: a chain with its start cut off no longer verifies."""
    schedules: Literal["keep"] = "keep"
    """Schedules run until removed (by their owner, an admin, or ``threadline forget``)."""

    def days(self, kind: Kind) -> float | None:
        """The setting of ``kind`` in days (None: kept)."""
        value = getattr(self, kind)
        return None if value == "keep" else float(value)


@dataclass
class Swept:
    """What one sweep removed, by kind; the cut-off of each (epoch seconds)."""

    removed: dict[str, int] = field(default_factory=dict)
    cutoffs: dict[str, float] = field(default_factory=dict)


async def sweep(state: State, settings: RetentionSettings, *, clock: Clock | None = None) -> Swept:
    """Delete what is older than each setting (see the module docstring)."""
    now = (clock or SYSTEM_CLOCK).now()
    swept = Swept()
    if (days := settings.days("conversations")) is not None:
        cutoff = swept.cutoffs["conversations"] = now - days * DAY
        swept.removed["conversations"] = await state.conversations.prune_before(cutoff)
    if (days := settings.days("memories")) is not None:
        cutoff = swept.cutoffs["memories"] = now - days * DAY
        when = dt.datetime.fromtimestamp(cutoff, dt.UTC)
        swept.removed["memories"] = await state.memory.forget_before(when)
    if (days := settings.days("usage")) is not None:
        cutoff = swept.cutoffs["usage"] = now - days * DAY
        first_kept = dt.datetime.fromtimestamp(cutoff, dt.UTC).date()
        swept.removed["usage"] = await state.usage.prune_before(first_kept)
    return swept
