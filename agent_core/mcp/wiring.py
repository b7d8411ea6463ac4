"""``attach``: give an agent the tools of some of the hub's MCP servers.

The agent's registry gets a ``ToolSource`` of those servers (their tools join its own for
every turn, under the same permission check, approval, hooks and audit), and, where a
server signs each person in, its workflow handler learns ``/connections`` and
``/disconnect``::

    hub = McpHub(settings.mcp, store=state.cache, token_key=..., callback_url=...)
    attach(agent, hub, ["tickets"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_core.mcp.commands import McpCommands

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.mcp.hub import McpHub


def attach(agent: Agent, hub: McpHub, names: Sequence[str] | None = None) -> None:
    """Give ``agent`` the tools of the hub's servers ``names`` (all by default)."""
    source = hub.source(names)
    if not source.servers:
        return
    agent.tool_registry.add_source(source)
    if any(server.auth == "user" for server in source.servers):
        agent.workflow_handler = McpCommands(
            agent.workflow_handler, hub=hub, servers=source.servers
        )
