"""Your tools over MCP: any Model Context Protocol server's tools, as Threadline tools.

Configured as ``[[mcp]]`` tables (``McpServerConfig``; ``McpSettings`` reads them), each
server's tools join an agent's own for every turn (``attach``: a ``ToolSource``), under the
same permission check, approval, hooks and audit. ``McpHub`` holds the process's sessions
(one per server, one per person and server where each person signs in with their own
account) and the people's sealed tokens. Needs the ``mcp`` extra
(``pip install 'threadline[mcp]'``); configuring servers without it is refused with that line.

The modules, one concept each::

    config       [[mcp]]: McpServerConfig            settings   McpSettings, check_mcp
    hub          McpHub: sessions, sign-ins, status   wiring     attach: an agent gets servers
    source       the tools each turn is offered       tool       McpTool (one server tool)
    connection   one supervised session               pool       the process's sessions
    transport    stdio / streamable HTTP clients       backoff    waits between restarts
    schemas      input schemas checked                 results    CallToolResult -> ToolResult
    approval     approval from config or hints        naming     names around collisions
    masking      no secret reaches anyone             errors     the McpError tree
    connect      connect_<server> (not signed in)     commands   /connections, /disconnect
    auth/        crypto, vault, signin (OAuth state), oauth (the SDK's client, per person)
    testing/     real servers and an authorization server for tests, demos, benchmarks
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.errors import (
    McpCallError,
    McpError,
    McpNotInstalled,
    McpTimeout,
    McpUnavailable,
    SignInRequired,
)
from agent_core.mcp.settings import McpSettings, check_mcp

if TYPE_CHECKING:
    from agent_core.mcp.hub import McpHub, ServerStatus, SignedIn
    from agent_core.mcp.wiring import attach

_LAZY = {
    "attach": "agent_core.mcp.wiring",
    "McpHub": "agent_core.mcp.hub",
    "ServerStatus": "agent_core.mcp.hub",
    "SignedIn": "agent_core.mcp.hub",
}

__all__ = [
    "McpCallError",
    "McpError",
    "McpHub",
    "McpNotInstalled",
    "McpServerConfig",
    "McpSettings",
    "McpTimeout",
    "McpUnavailable",
    "ServerStatus",
    "SignInRequired",
    "SignedIn",
    "attach",
    "check_mcp",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.mcp' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
