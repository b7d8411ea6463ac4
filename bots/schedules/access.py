"""``OwnerAccess``: what a schedule's owner may do *now*, resolved again at every run through
the agent that serves the schedule's place (its profile, its resolver, its tools).

- **who**: the owner's context (the signed metadata kept at creation) goes through the
  agent's own ``UserResolver`` again: groups come from the workspace today, not from when
  the schedule was made; a resolver that refuses them (``AgentError``) means no access;
- **may ask here**: the agent's ``allowed_groups`` (a profile's ``allowed_groups``);
- **data**: an alert's query and the schema an alert is written on go through the
  ``run_sql`` tool of that agent, only when the owner may use it (its access groups), with
  the runner the tool gives the owner (``runner.for_user(owner)``: their data identity,
  role and row-level settings, resolved again each time; read-only by construction). Never
  the tool's own runner: no path runs a schedule's SQL as the database's own user. An owner
  the database now refuses (``NoDataAccess``) has no access: the run pauses the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.agent import Agent
from agent_core.errors import AgentError, PermissionDeniedError
from agent_core.schedules.runs import OwnerCheck
from agent_core.tools.sql import RunSqlTool, SqlError, SqlResult, SqlRunner
from agent_core.users import RequestContext, User
from bots.agents import ServedAgent
from bots.profiles import ProfileRouter

SQL_TOOL = "run_sql"


@dataclass(frozen=True)
class OwnerAccess:
    """See the module docstring.

    >>> from agent_core import InMemoryAgentMemory, ScriptedLlmService, StaticUserResolver
    >>> from agent_core import ToolRegistry
    >>> agent = Agent(llm_service=ScriptedLlmService([]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u1")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> OwnerAccess(agent).agent_for(RequestContext())[0] is agent
    True
    """

    agent: ServedAgent

    def agent_for(self, context: RequestContext) -> tuple[Agent, RequestContext]:
        """The agent that answers in the schedule's place (a profile's, or the default)."""
        if isinstance(self.agent, ProfileRouter):
            agent, routed, _ = self.agent.route(context)
            return agent, routed
        assert isinstance(self.agent, Agent), "an agent the bots serve is an Agent or a router"
        return self.agent, context

    async def check(self, context: RequestContext) -> OwnerCheck:
        """The owner resolved again, and whether they may still ask there."""
        agent, routed = self.agent_for(context)
        try:
            user = await agent.user_resolver.resolve_user(routed)
        except AgentError as refused:
            return OwnerCheck("no_access", reason=f"you may no longer ask there ({refused})")
        allowed = agent.config.allowed_groups
        if allowed and not user.is_member_of(allowed):
            return OwnerCheck("no_access", user, "you may no longer ask there")
        if user.granted_nothing:  # now of another organisation (or never of this one)
            return OwnerCheck("no_access", user, "you are no longer a member here")
        tool = agent.tool_registry.peek(SQL_TOOL)
        if isinstance(tool, RunSqlTool):
            try:
                tool.runner.for_user(user)  # as the agent's data-access gate refuses a turn
            except PermissionDeniedError:
                return OwnerCheck("no_access", user, "you no longer have data access there")
        return OwnerCheck("active", user)

    def _sql(self, context: RequestContext, owner: User) -> tuple[RunSqlTool, SqlRunner]:
        """The database tool serving the place and the owner's runner in it (raises
        ``SqlError`` when the owner may no longer query it)."""
        agent, _ = self.agent_for(context)
        tool = agent.tool_registry.peek(SQL_TOOL)
        if not isinstance(tool, RunSqlTool):
            raise SqlError("there is no database to query here any more", reason="read_only")
        if not agent.tool_registry.can_use(SQL_TOOL, owner):
            raise SqlError("you may no longer query this database", reason="read_only")
        try:
            return tool, tool.runner.for_user(owner)
        except PermissionDeniedError as refused:
            raise SqlError(str(refused), reason="read_only") from None

    async def query(self, context: RequestContext, owner: User, sql: str) -> SqlResult:
        """``sql`` as the owner, read-only (raises ``SqlError``)."""
        tool, runner = self._sql(context, owner)
        return await runner.run_sql(sql, max_rows=tool.max_rows, timeout=tool.timeout)

    async def schema(self, context: RequestContext, owner: User) -> str:
        """The schema the owner may read, as text (alerts are written on it)."""
        _, runner = self._sql(context, owner)
        return await runner.describe()

    def dialect(self, context: RequestContext) -> str:
        agent, _ = self.agent_for(context)
        tool = agent.tool_registry.peek(SQL_TOOL)
        return tool.runner.dialect if isinstance(tool, RunSqlTool) else "SQL"
