"""``[retention]``: how long each kind of data Threadline keeps is kept, and the sweep.

::

    [retention]
    conversations = 90     # days after a conversation's last message (the default)
    memories = 365         # days after a memory was made or last refreshed (the default)
    usage = 400            # days of the LLM usage ledger (the default)
    audit = "keep"         # the audit trail: always kept (its chain starts at record 1)
    schedules = "keep"     # until their owner removes them (or is erased)

    sweep_every = 3600     # seconds between the bots' own sweeps (0: only the command)

A number is days; ``"keep"`` keeps forever. Conversations expire by themselves on Redis
(a TTL restarted at each write) and are hidden at once on SQLite; everything else older
than its setting goes when ``sweep`` runs: inside the bots (``RetentionSweeper``, every
``sweep_every`` seconds), and from ``threadline retention`` (cron or a Kubernetes CronJob).
Every step is an idempotent delete of what is older than the cut-off, so processes or runs
that overlap do no harm. "Now" is the injected clock.

The bots' sweep runs in one process per period however many run: each process wakes at
the start of every period (``now // sweep_every`` on its clock) and takes that period's
lease in the state (``state.cache.add("retention:sweep:<period>")``: SQLite's or Redis's
atomic add-if-absent); the process that took it sweeps, the others sleep to the next
period. A process that dies mid-sweep leaves the rest of that period's sweep to the next.

Kept for a fixed time and not set here (see the README's "Your data"): thread transcripts
and identity caches (their TTLs), approvals (a day after they expire), files shared with a
question (7 days idle), delivery dedupe keys (minutes).

>>> RetentionSettings().days("conversations"), RetentionSettings().days("audit")
(90.0, None)
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.settings import Section, env

if TYPE_CHECKING:
    from agent_core.state_factory import State

log = logging.getLogger(__name__)

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

    sweep_every: float = Field(
        3600.0, ge=0, validation_alias=env("sweep_every", "THREADLINE_RETENTION_SWEEP_EVERY")
    )
    """Seconds between the bots' own sweeps (one process per period sweeps); 0: the bots do
    not sweep (``threadline retention`` from cron does)."""

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


LEASE = "retention:sweep:{period}"
"""The state key one process takes to sweep in a period (``RetentionSweeper``)."""


class RetentionSweeper:
    """The bots' periodic sweep, one process per period (see the module docstring).

    ``tick`` is one period's try (tests call it); ``run`` ticks at the start of every
    period on ``clock`` until cancelled, calling ``on_tick`` with what it swept (None: the
    lease was another process's, or the state failed)."""

    def __init__(
        self,
        state: State,
        settings: RetentionSettings,
        *,
        clock: Clock | None = None,
        on_tick: Callable[[Swept | None], None] | None = None,
    ) -> None:
        if settings.sweep_every <= 0:
            raise ValueError("sweep_every is 0: the bots do not sweep")
        self.state = state
        self.settings = settings
        self.every = settings.sweep_every
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.on_tick = on_tick

    def period(self) -> int:
        return int(self.clock.now() // self.every)

    async def tick(self) -> Swept | None:
        """Sweep if this process takes this period's lease; what it swept, else None."""
        key = LEASE.format(period=self.period())
        if not await self.state.cache.add(key, True, ttl=2 * self.every):
            return None
        return await sweep(self.state, self.settings, clock=self.clock)

    async def run(self) -> None:
        while True:
            swept: Swept | None = None
            try:
                swept = await self.tick()
            except Exception as error:  # the state down: the next period tries again
                log.warning("retention: this period's sweep failed (%s)", error)
            if swept is not None:
                log.info("retention: swept %s", swept.removed)
            if self.on_tick is not None:
                self.on_tick(swept)
            now = self.clock.now()
            await self.clock.sleep((now // self.every + 1) * self.every - now)


@contextlib.asynccontextmanager
async def sweeping(
    state: State, settings: RetentionSettings | None, *, clock: Clock | None = None
) -> AsyncIterator[RetentionSweeper | None]:
    """The bots' sweep as a task of this process while the block runs (nothing when
    ``settings`` is None or ``sweep_every`` is 0): ``bots.slack.app.serve``,
    ``bots.teams.app.serve``."""
    if settings is None or settings.sweep_every <= 0:
        yield None
        return
    sweeper = RetentionSweeper(state, settings, clock=clock)
    task = asyncio.create_task(sweeper.run(), name="retention-sweeper")
    try:
        yield sweeper
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
