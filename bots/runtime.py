"""``ChannelRuntime``: the pieces every bot has, built once, in one pass, in the order they
need each other; a channel's bot adds only what its platform forces (its listeners, its
clients, its own events).

    state, metrics            the bot's (defaults: this process only, the channel's metrics)
    place policy              a place shared with another organisation (``bots.places``),
                              and its lines on ``/status``
    home changes              what homes show changed (``bots.home_changes``), for a
                              channel that refreshes homes; told by the pieces below
    approvals                 decisions, their messages, the expiry sweep; the resuming turns
                              go on the turn queue (``bots.approvals``)
    schedules                 the dispatcher and the schedule commands (``bots.schedules``)
    home                      one person's home (``bots.home``)
    deliveries                what is not a turn deduplicated (``first_delivery``); the
                              asker told once that the state is down (``tell_unavailable``)
    wing                      the channel's part of answering turns, built from the pieces
                              above (``Shared``) by the bot
    turns                     the turn host: accepted turns answered by this process's worker
                              (``bots.turns``); files become the asker's tables there

Nothing is told afterwards where another piece is: what two pieces both need is built
before either (the turn queue, in the state, is where approvals queue their resuming turns
and where the turn host takes turns from; the home changes are noted by approvals,
schedules and the MCP hub and read by the channel's refresher).

A channel supplies its ``ChannelPort``: what only the platform can do for these pieces
(show a decided approval in place, say what turn resumes one, say who is at home)::

    runtime = ChannelRuntime(agent, port, settings, wing_of, state=state)
    await runtime.open()      # the turn worker, the approval sweep, the schedule dispatcher
    await runtime.idle()      # until every queued turn is answered (tests, benchmarks)
    await runtime.close()     # the dispatcher and the sweep stopped, the turns drained, the
                              # MCP servers' sessions ended
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agent_core.approvals.record import ApprovalRecord
from agent_core.clock import Clock
from agent_core.schedules.settings import ScheduleSettings
from agent_core.state_factory import State
from bots.agents import ServedAgent
from bots.approvals import Approvals, ResumedTurn
from bots.channel_settings import ChannelSettings
from bots.files import SharedFiles
from bots.home import Home
from bots.home_changes import HomeChanges
from bots.mcp import close_mcp, hub_of
from bots.metrics import ChannelMetrics
from bots.outage import RecentDeliveries
from bots.places import PlacePolicy, edge_lines, show_in_status
from bots.schedules.service import BotSchedules
from bots.turns import TurnHost, Wing


class ChannelPort(Protocol):
    """What only the platform can do for the runtime's pieces."""

    platform: str
    """The channel's name (``slack``, ``teams``): its metrics, its approvals' sweep."""

    def home_line(self) -> str:
        """Who is at home here (the organisation), for ``/status``."""
        ...

    async def show_approval(self, record: ApprovalRecord) -> None:
        """A decision made here, shown in place of the approval message (where noted)."""
        ...

    async def resumed(self, record: ApprovalRecord, hints: Mapping[str, Any]) -> ResumedTurn | None:
        """The turn that continues a decided approval in this channel."""
        ...


@dataclass(frozen=True)
class Shared:
    """The runtime's pieces a channel's wing is built from."""

    approvals: Approvals
    schedules: BotSchedules
    home: Home
    place_policy: PlacePolicy


WingOf = Callable[[Shared], Wing]
"""Builds the channel's wing from the shared pieces."""


class ChannelRuntime:
    """See the module docstring. ``refreshes_homes``: the channel refreshes homes when what
    they show changes (``changes`` are then noted; Slack's Home tab).

    >>> from agent_core import Agent, ScriptedLlmService, ToolRegistry
    >>> from agent_core.state_factory import StateSettings, build_state
    >>> class Port:
    ...     platform = "example"
    ...     def home_line(self): return "nobody"
    ...     async def show_approval(self, record): ...
    ...     async def resumed(self, record, hints): ...
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry())
    >>> runtime = ChannelRuntime(agent, Port(), ChannelSettings(), lambda shared: None,
    ...                          state=build_state(StateSettings(ephemeral=True)))
    >>> runtime.approvals.platforms, runtime.changes
    (('example',), None)
    """

    def __init__(
        self,
        agent: ServedAgent,
        port: ChannelPort,
        settings: ChannelSettings,
        wing_of: WingOf,
        *,
        state: State,
        metrics: ChannelMetrics | None = None,
        files: SharedFiles | None = None,
        schedules: ScheduleSettings | None = None,
        clock: Clock | None = None,
        refreshes_homes: bool = False,
    ) -> None:
        self.agent = agent
        self.state = state
        self.metrics = metrics or ChannelMetrics(port.platform)
        self.place_policy = PlacePolicy.of(settings, agent)
        show_in_status(
            agent, lambda: edge_lines(port.home_line(), settings.external_groups, self.place_policy)
        )
        self.changes = HomeChanges(port.platform) if refreshes_homes else None
        changes = self.changes
        self.approvals = Approvals(
            agent,
            state.turns,
            show=port.show_approval,
            resumed=port.resumed,
            metrics=self.metrics,
            changed=changes.approval_changed if changes is not None else None,
            platforms=(port.platform,),
        )
        self.schedules = BotSchedules(
            state,
            agent,
            schedules,
            clock=clock,
            touched=changes.schedule_changed if changes is not None else None,
        )
        if changes is not None and (hub := hub_of(agent)) is not None:
            hub.watch(changes.person_changed)
        self.home = Home(agent, self.schedules, self.approvals)
        wing = wing_of(Shared(self.approvals, self.schedules, self.home, self.place_policy))
        self.turns = TurnHost(
            agent,
            state.turns,
            wing,
            metrics=self.metrics,
            files=files,
            concurrency=settings.turn_concurrency,
            per_person=settings.turns_per_person,
            dedupe_ttl=settings.dedupe_ttl,
        )
        if files is not None:
            files.serve(agent)
        self.dedupe_ttl = settings.dedupe_ttl
        self.told_unavailable = RecentDeliveries(ttl=settings.dedupe_ttl)
        """Deliveries told "temporarily unavailable" lately (a retry is not told twice)."""

    async def first_delivery(self, key: str) -> bool:
        """False (and counted) when ``key`` was delivered before (``state.dedupe``: what is
        not a turn; a turn is deduplicated by the queue). Raises ``StateUnavailableError``."""
        if await self.state.dedupe.first_time(key, ttl=self.dedupe_ttl):
            return True
        self.metrics.duplicates.inc()
        return False

    def tell_unavailable(self, delivery: str | None) -> bool:
        """Whether the asker of ``delivery`` is told that the state is down: once per
        delivery (a retry of one told is counted as a duplicate); each told is counted."""
        if delivery is not None and not self.told_unavailable.first(delivery):
            self.metrics.duplicates.inc()
            return False
        self.metrics.unavailable.inc()
        return True

    def open(self) -> None:
        """Start this process's turn worker, approval sweep and schedule dispatcher (call
        in the event loop)."""
        self.turns.start()
        self.approvals.start()
        self.schedules.start()

    async def close(self, *, timeout: float = 30.0) -> None:
        """Stop dispatching schedules and sweeping approvals, let running turns finish (up
        to ``timeout`` s), and end the MCP servers' sessions."""
        await self.schedules.drain()
        await self.approvals.stop()
        await self.turns.drain(timeout=timeout)
        await close_mcp(self.agent)

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until every queued turn is answered (tests, benchmarks)."""
        await self.turns.idle(timeout=timeout)
