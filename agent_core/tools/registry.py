"""``ToolRegistry``: the gatekeeper between the LLM's tool calls and your tools.

``execute`` runs one call through: lookup -> permission check -> argument validation ->
``transform_args`` -> the caller's ``before_execute`` (the agent's ``before_tool`` hooks) ->
the tool, timed. Every failure comes back as a ``ToolResult(success=False)`` the LLM can read;
nothing raises except a hook's unexpected bug.

Besides its own tools, a registry asks its ``ToolSource``s (``add_source``: an MCP server's
tools) for each turn's tools (``offer``); what they offered is then looked up, checked and
run exactly like the registry's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agent_core.components.ui_state import RefusalKind
from agent_core.context import ToolContext
from agent_core.errors import AgentError
from agent_core.tool_contract import Tool, ToolCall, ToolRejection, ToolResult, ToolSchema
from agent_core.tools.sources import Offer, ToolSource, TurnTools
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.audit import AuditLogger
    from agent_core.config import AuditConfig

BeforeExecute = Callable[[Tool[Any]], Awaitable[None]]

logger = logging.getLogger(__name__)


def failure(
    message: str,
    *,
    error: str | None = None,
    refusal: RefusalKind | None = None,
    **metadata: Any,
) -> ToolResult:
    """A failed ``ToolResult`` whose ``result_for_llm`` explains the failure (``refusal``:
    refused for the person asking)."""
    return ToolResult(
        success=False,
        result_for_llm=message,
        error=error or message,
        metadata=metadata,
        refusal=refusal,
    )


def _describe_validation_error(tool_name: str, error: PydanticValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in issue['loc']) or '(arguments)'}: {issue['msg']}"
        for issue in error.errors(include_url=False)
    )
    return f"Invalid arguments for tool '{tool_name}': {problems}"


class ToolRegistry:
    """Holds tools and the groups allowed to use each; an empty group list means everyone.

    >>> registry = ToolRegistry()
    >>> registry.list_tool_names()
    []
    """

    def __init__(
        self,
        *,
        audit_logger: AuditLogger | None = None,
        audit_config: AuditConfig | None = None,
    ) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._access: dict[str, tuple[str, ...]] = {}
        self._schemas: dict[str, ToolSchema] = {}
        self.audit_logger = audit_logger
        self.audit_config = audit_config
        self.narrowed = False
        """Made by ``only``: a configuration named its tools, nothing joins them implicitly."""
        self._sources: list[ToolSource] = []
        self._offered: dict[str, tuple[Tool[Any], tuple[str, ...]]] = {}
        """The latest tool each name was offered as by a source, and its groups."""

    def register_local_tool(self, tool: Tool[Any], access_groups: list[str] | None = None) -> None:
        """Register ``tool`` for ``access_groups`` (default: the tool's own ``access_groups``)."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        groups = tuple(tool.access_groups if access_groups is None else access_groups)
        schema = tool.get_schema()
        self._tools[tool.name] = tool
        self._access[tool.name] = groups
        self._schemas[tool.name] = schema.model_copy(update={"access_groups": list(groups)})

    def only(self, names: list[str]) -> ToolRegistry:
        """A registry with only the tools named (same groups, same audit settings); unknown
        names are an error, so a typo in a configuration is caught at start.

        >>> ToolRegistry().only(["run_sql"])
        Traceback (most recent call last):
        ValueError: no tool named 'run_sql' (the agent has: none)
        """
        unknown = [name for name in names if name not in self._tools]
        if unknown:
            have = ", ".join(self._tools) or "none"
            raise ValueError(f"no tool named {unknown[0]!r} (the agent has: {have})")
        narrowed = ToolRegistry(audit_logger=self.audit_logger, audit_config=self.audit_config)
        for name in names:
            narrowed.register_local_tool(self._tools[name], list(self._access[name]))
        for source in self._sources:  # configured on their own ([[mcp]]), so they stay
            narrowed.add_source(source)
        narrowed.narrowed = True
        return narrowed

    def add_source(self, source: ToolSource) -> None:
        """Ask ``source`` for tools at every turn (``offer``), beside the registry's own."""
        self._sources.append(source)

    @property
    def sources(self) -> tuple[ToolSource, ...]:
        return tuple(self._sources)

    def _entry(self, name: str) -> tuple[Tool[Any], tuple[str, ...]] | None:
        tool = self._tools.get(name)
        if tool is not None:
            return tool, self._access[name]
        return self._offered.get(name)

    async def get_tool(self, name: str) -> Tool[Any] | None:
        return self.peek(name)

    def peek(self, name: str) -> Tool[Any] | None:
        """The registered (or offered) tool, without any permission check (for scheduling
        decisions)."""
        entry = self._entry(name)
        return None if entry is None else entry[0]

    async def list_tools(self) -> list[str]:
        return self.list_tool_names()

    def list_tool_names(self) -> list[str]:
        return list(self._tools)

    def access_groups(self, name: str) -> tuple[str, ...]:
        entry = self._entry(name)
        return () if entry is None else entry[1]

    def can_use(self, name: str, user: User) -> bool:
        entry = self._entry(name)
        return entry is not None and user.is_member_of(entry[1])

    async def get_schemas(self, user: User | None = None) -> list[ToolSchema]:
        """Schemas of the registry's own tools ``user`` may use (all of them when ``user`` is
        None); ``offer`` adds what the sources offer."""
        return [
            schema
            for name, schema in self._schemas.items()
            if user is None or user.is_member_of(self._access[name])
        ]

    async def offer(self, user: User) -> TurnTools:
        """The tools of ``user``'s turn: the registry's own they may use (``get_schemas``),
        and what each source offers them now, with the sources' notes for admins. A source
        that fails offers nothing (noted); the others and the registry's own tools still
        come."""
        turn = TurnTools(schemas=list(await self.get_schemas(user)))
        taken = frozenset(self._tools)
        for source in self._sources:
            try:
                offer = await source.offer(user, taken)
            except Exception as failed:  # a source's bug must not take the turn down
                logger.exception("tool source %s failed", type(source).__name__)
                offer = Offer(notes=[f"{type(source).__name__} failed: {failed}"])
            turn.notes.extend(offer.notes)
            for item in offer.tools:
                name = item.tool.name
                if name in taken:
                    continue  # a source never shadows the registry's own tool
                self._offered[name] = (item.tool, item.access_groups)
                if user.is_member_of(item.access_groups):
                    schema = item.tool.get_schema()
                    groups = list(item.access_groups)
                    turn.schemas.append(schema.model_copy(update={"access_groups": groups}))
        return turn

    async def transform_args(
        self, tool: Tool[Any], args: BaseModel, user: User, context: ToolContext
    ) -> BaseModel | ToolRejection:
        """Override to rewrite validated arguments per user (row-level security, tenant
        filters) or to refuse the call with a ``ToolRejection``."""
        return args

    async def execute(
        self,
        tool_call: ToolCall,
        context: ToolContext,
        *,
        before_execute: BeforeExecute | None = None,
    ) -> ToolResult:
        entry = self._entry(tool_call.name)
        if entry is None:
            return failure(f"Tool '{tool_call.name}' not found", error_type="not_found")
        tool, groups = entry
        if not await self._check_access(tool, groups, context):
            return failure(
                f"Permission denied: you may not use tool '{tool.name}'",
                error_type="permission_denied",
                refusal="permission",
            )
        try:
            args: BaseModel | ToolRejection = tool.get_args_schema().model_validate(
                tool_call.arguments
            )
        except PydanticValidationError as invalid:
            return failure(
                _describe_validation_error(tool.name, invalid), error_type="invalid_arguments"
            )
        args = await self.transform_args(tool, args, context.user, context)
        if isinstance(args, ToolRejection):
            return failure(f"Tool call rejected: {args.reason}", error_type="rejected")
        if before_execute is not None:
            try:
                await before_execute(tool)
            except AgentError as blocked:
                return failure(f"Tool call blocked: {blocked}", error_type="blocked")
        await self._audit_invocation(tool_call, context)
        result = await self._run(tool, args, context)
        result.metadata.setdefault("tool_name", tool_call.name)
        result.metadata.setdefault("arguments", dict(tool_call.arguments))
        if audit := self._auditor("log_tool_results"):
            await audit.log_tool_result(context.user, tool_call, result, context)
        return result

    async def _run(self, tool: Tool[Any], args: BaseModel, context: ToolContext) -> ToolResult:
        started = time.perf_counter()
        try:
            result = await tool.execute(context, args)
        except Exception as crashed:  # normalised for the LLM; the agent may recover
            result = failure(
                f"Tool '{tool.name}' failed: {crashed}",
                error_type="execution_error",
            )
            result.exception = crashed
        result.metadata["execution_time_ms"] = (time.perf_counter() - started) * 1000
        return result

    def _auditor(self, flag: str) -> AuditLogger | None:
        """The audit logger when auditing is on and ``flag`` of the audit config is set."""
        config = self.audit_config
        if config is None or not config.enabled or not getattr(config, flag):
            return None
        return self.audit_logger

    async def _check_access(
        self, tool: Tool[Any], groups: tuple[str, ...], context: ToolContext
    ) -> bool:
        granted = context.user.is_member_of(groups)
        if audit := self._auditor("log_tool_access_checks"):
            await audit.log_tool_access_check(
                context.user,
                tool.name,
                granted,
                list(groups),
                context,
                reason=None if granted else "user is in none of the required groups",
            )
        return granted

    async def _audit_invocation(self, tool_call: ToolCall, context: ToolContext) -> None:
        if audit := self._auditor("log_tool_invocations"):
            await audit.log_tool_invocation(
                context.user,
                tool_call,
                list(context.metadata.get("ui_features_available", [])),
                context,
                sanitize_parameters=bool(
                    self.audit_config and self.audit_config.sanitize_tool_parameters
                ),
            )
