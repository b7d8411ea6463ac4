"""``McpTool``: one tool of an MCP server, as a Threadline tool like any other.

Its name is the server's (or ``<server>_<name>`` where that would collide with a built-in
tool or another server's), its schema the server's input schema (checked,
``agent_core.mcp.schemas``), its ``approval`` the configuration's or the server's
hints' (``agent_core.mcp.approval``). The arguments the model writes are checked
against that schema by the registry, before the permission-checked, hooked and audited call
reaches the server (``McpCaller``).

The description is the server's, marked with where it comes from. It reaches the model as
written: a server's descriptions are trusted because an admin configured the server, and
nothing in one grants anything (the person's groups and the approval still decide).

>>> from agent_core.mcp.config import McpServerConfig
>>> tool = McpTool(
...     name="search", remote="search", description="Search tickets.",
...     server=McpServerConfig(name="tickets", command="tickets-mcp"),
...     parameters={"type": "object", "properties": {"q": {"type": "string"}}},
...     approval="never", caller=None)
>>> tool.get_schema().description
'Search tickets. (MCP server tickets)'
>>> tool.get_args_schema().model_validate({"q": 3})
Traceback (most recent call last):
pydantic_core._pydantic_core.ValidationError: 1 validation error for McpArguments[search]
  Value error, q: 3 is not of type 'string' ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, model_validator

from agent_core.mcp.schemas import ArgumentCheck
from agent_core.tool_contract import Tool, ToolResult, ToolSchema

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.mcp.config import McpServerConfig
    from agent_core.tool_contract import ApprovalMode

MAX_DESCRIPTION_CHARS = 2000


class McpCaller(Protocol):
    """Runs one call of an MCP tool for the person of ``context``."""

    async def call(
        self, tool: McpTool, context: ToolContext, arguments: dict[str, Any]
    ) -> ToolResult: ...


class McpArguments(BaseModel):
    """A tool's arguments as the model wrote them: a JSON object, checked against the
    server's input schema (each tool has its own subclass carrying its ``check``).

    >>> McpArguments.model_validate({"q": "vat"}).arguments()
    {'q': 'vat'}
    """

    model_config = ConfigDict(extra="allow")
    check: ClassVar[ArgumentCheck | None] = None

    @model_validator(mode="before")
    @classmethod
    def _against_the_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("the arguments must be a JSON object")
        if cls.check is not None and (problems := cls.check.problems(data)):
            raise ValueError("; ".join(problems))
        return data

    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class McpTool(Tool[McpArguments]):
    """One server tool; see the module docstring.

    >>> from agent_core.mcp.config import McpServerConfig
    >>> McpTool(name="s", remote="s", description="", parameters={"type": "object"},
    ...         server=McpServerConfig(name="t", command="t"), approval="ask_once",
    ...         caller=None).approval_mode
    'ask_once'
    """

    def __init__(
        self,
        *,
        name: str,
        remote: str,
        description: str,
        server: McpServerConfig,
        parameters: dict[str, Any],
        approval: ApprovalMode,
        caller: McpCaller | None,
    ) -> None:
        self.name = name
        self.remote = remote
        """The tool's name on its server."""
        self.server = server
        self.approval: ApprovalMode = approval
        self.description = (
            f"{description.strip()[:MAX_DESCRIPTION_CHARS]} (MCP server {server.name})".strip()
        )
        self._caller = caller
        self._arguments = type(
            f"McpArguments[{name}]",
            (McpArguments,),
            {"check": ArgumentCheck(parameters), "__module__": __name__},
        )
        self._tool_schema = ToolSchema(
            name=name, description=self.description, parameters=parameters
        )

    def get_args_schema(self) -> type[McpArguments]:
        return self._arguments

    def get_schema(self) -> ToolSchema:
        return self._tool_schema

    async def execute(self, context: ToolContext, args: McpArguments) -> ToolResult:
        if self._caller is None:
            raise RuntimeError(f"MCP tool {self.name!r} has no connection to run on")
        return await self._caller.call(self, context, args.arguments())
