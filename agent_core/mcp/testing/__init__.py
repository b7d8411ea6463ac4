"""What the MCP tests, the benchmark and the console's demo run against: real MCP servers
built with the ``mcp`` SDK's own server API, served over stdio or streamable HTTP on
127.0.0.1, and a small local OAuth 2.1 authorization server.

- ``Loopback``: an ASGI app on a free loopback port, in a thread;
- ``LocalAuthorizationServer`` and ``sign_in``: people's sign-ins, for real, with a browser
  played by ``httpx2``;
- ``python -m agent_core.mcp.testing.servers misbehaving``: a server that hangs,
  crashes, answers megabytes, lists broken schemas... (``servers``).

Needs the ``mcp`` extra (``pip install 'threadline[mcp]'``).
"""

from __future__ import annotations

from agent_core.mcp.testing.authorization import LocalAuthorizationServer, sign_in
from agent_core.mcp.testing.loopback import Loopback

__all__ = ["LocalAuthorizationServer", "Loopback", "sign_in"]
