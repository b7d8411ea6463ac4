"""``ConnectTool``: what the model is offered for a server the asker has not connected yet.

A server each person signs in to (``auth = "user"``) lists its tools only to someone signed
in, so for a person who is not, the model sees one tool, ``connect_<server>``, described by
the server's ``description``. When the question needs the server, the model calls it; the
person alone gets a "Connect <server>" button, and their question is answered once they
have connected (the sign-in remembers it).

>>> from agent_core.mcp.config import McpServerConfig
>>> server = McpServerConfig(name="tickets", url="https://t.example/mcp", auth="user",
...                          description="The support team's tickets.")
>>> tool = ConnectTool(server, None)
>>> tool.name, tool.approval
('connect_tickets', 'never')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict

from agent_core.mcp.config import McpServerConfig
from agent_core.tool_contract import Tool, ToolResult

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.tool_contract import ApprovalMode


class Connector(Protocol):
    """Starts a person's sign-in to a server (``McpToolSource`` is one)."""

    async def connect(self, server: McpServerConfig, context: ToolContext) -> ToolResult: ...


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConnectTool(Tool[NoArguments]):
    """``connect_<server>``; see the module docstring."""

    approval: ApprovalMode = "never"

    def __init__(self, server: McpServerConfig, source: Connector | None) -> None:
        self.server = server
        self._source = source
        self.name = f"connect_{server.name}"
        about = server.description or f"the {server.name} MCP server"
        self.description = (
            f"Connect the asker's own {server.name} account: {about} Call this when the "
            f"question needs {server.name}; the asker is shown a button to sign in, and "
            "their question is answered once they have."
        )

    def get_args_schema(self) -> type[NoArguments]:
        return NoArguments

    async def execute(self, context: ToolContext, args: NoArguments) -> ToolResult:
        if self._source is None:
            raise RuntimeError(f"{self.name} has no MCP source to sign in with")
        return await self._source.connect(self.server, context)
