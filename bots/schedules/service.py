"""``BotSchedules``: schedules in one bot process: the dispatcher running beside the turn
worker, the commands for a signed request, and what a scheduled turn needs to run.

    schedules = BotSchedules(state, agent, ScheduleSettings(), touched=changes.schedule_changed)
    schedules.start()                     # the dispatcher: due occurrences -> state.turns
    reply = await schedules.command(cmd, context, place=..., timezone=..., workspace=...)
    ...                                   # touched: each schedule a command or run touched
    await schedules.drain()

Every process of a bot runs a dispatcher; the store's claim makes each occurrence one turn
(``agent_core.schedules.dispatcher``), which any process's turn worker answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.components import UiComponent
from agent_core.errors import AgentError
from agent_core.schedules.authoring import AlertAuthor
from agent_core.schedules.commands import ScheduleCommand
from agent_core.schedules.dispatcher import ScheduleDispatcher
from agent_core.schedules.handling import Asker, ScheduleCommands
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.replies import card
from agent_core.schedules.runs import ScheduleRunner
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.zones import owner_zone
from agent_core.tools.sql import SqlResult
from agent_core.users import OUTSIDER_REFUSAL, RequestContext, User
from bots.agents import ServedAgent
from bots.schedules.access import OwnerAccess

if TYPE_CHECKING:
    from agent_core.schedules.store import ScheduleStore
    from agent_core.state.turns import TurnQueue


class ScheduleState(Protocol):
    """Where schedules and turns live (``agent_core.state_factory.State`` is one; the console has
    its own)."""

    @property
    def schedules(self) -> ScheduleStore: ...

    @property
    def turns(self) -> TurnQueue: ...


log = logging.getLogger("threadline.schedules")


def new_id_for(turn_id: str | None) -> str | None:
    """The id of the schedule a turn makes: the same on a re-run of the turn.

    >>> new_id_for("1700000000000-0"), new_id_for(None)
    ('404cb3b3', None)
    """
    if turn_id is None:
        return None
    return hashlib.sha256(f"schedule:{turn_id}".encode()).hexdigest()[:8]


class BotSchedules:
    """See the module docstring. ``touched`` is told of each schedule a command made,
    changed, removed or ran, and each run that finished here (synchronous: it notes, never
    waits).

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry)
    >>> from agent_core.state_factory import StateSettings, build_state
    >>> agent = Agent(llm_service=ScriptedLlmService([]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u1")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> schedules = BotSchedules(build_state(StateSettings(ephemeral=True)), agent)
    >>> schedules.settings.min_interval
    900.0
    """

    def __init__(
        self,
        state: ScheduleState,
        agent: ServedAgent,
        settings: ScheduleSettings | None = None,
        *,
        clock: Clock | None = None,
        touched: Callable[[Schedule], None] | None = None,
    ) -> None:
        self.settings = settings or ScheduleSettings()
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.store = state.schedules
        self.access = OwnerAccess(agent)
        self.dispatcher = ScheduleDispatcher(
            self.store, state.turns, clock=self.clock, poll=self.settings.poll
        )
        self.runner = ScheduleRunner(
            self.store, clock=self.clock, late_after=self.settings.late_after, touched=touched
        )
        self.commands = ScheduleCommands(
            self.store,
            settings=self.settings,
            clock=self.clock,
            changed=self.dispatcher.wake,
            run_now=self.dispatcher.run_once,
            touched=touched,
        )
        self._task: asyncio.Task[None] | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Run the dispatcher in this process (call in the event loop); nothing when off."""
        if self.settings.enabled and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self.dispatcher.run(), name="schedule-dispatcher")

    async def drain(self) -> None:
        """Stop dispatching (what was dispatched stays on the turn queue)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- commands -----------------------------------------------------------------------------

    async def command(
        self,
        command: ScheduleCommand,
        context: RequestContext,
        *,
        place: Place,
        workspace: str,
        timezone: str | None,
        turn_id: str | None = None,
    ) -> UiComponent:
        """The reply to a schedule command from the signed request ``context``: the asker is
        resolved as for a turn (through the agent serving the place), their alerts written
        with the data they may read there; ``turn_id`` (the turn carrying the command) makes
        a re-run of it find the schedule it made."""
        agent, routed = self.access.agent_for(context)
        try:
            user = await agent.user_resolver.resolve_user(routed)
        except AgentError as refused:
            return card("I could not do that", str(refused), "warning", private=True)
        if user.granted_nothing:  # another organisation's person: nothing is saved
            return card("I could not do that", OUTSIDER_REFUSAL, "warning", private=True)
        asker = Asker(
            user,
            workspace,
            timezone=owner_zone(timezone),
            name=user.username,
            author=self._author(routed, user),
        )
        return await self.commands.handle(command, asker, place, new_id=new_id_for(turn_id))

    def _author(self, context: RequestContext, user: User) -> AlertAuthor | None:
        agent, _ = self.access.agent_for(context)
        if not agent.tool_registry.can_use("run_sql", user):
            return None

        async def query(owner: User, sql: str) -> SqlResult:
            return await self.access.query(context, owner, sql)

        async def schema(owner: User) -> str:
            return await self.access.schema(context, owner)

        return AlertAuthor(
            agent.llm_service,
            query=query,
            schema=schema,
            dialect=self.access.dialect(context),
            hooks=agent.lifecycle_hooks,
            middlewares=agent.llm_middlewares,
        )
