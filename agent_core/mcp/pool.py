"""``McpConnections``: the process's MCP sessions, one per server (one per person and server
where each person signs in), opened lazily and reused.

A server everyone shares (``auth = "none"`` or ``"service"``) has one ``McpConnection`` for
the process. A server each person signs in to (``auth = "user"``) has one per person, made
with that person's own ``PersonalAuth``: a session is never shared between two people, so
one person's token is never sent on another's behalf. People's sessions are bounded
(``max_personal``, the least recently used closed first) and closed after ``idle_after``
seconds unused. ``aclose`` ends every session (stdio processes stopped and reaped).

>>> from agent_core.mcp.config import McpServerConfig
>>> pool = McpConnections([McpServerConfig(name="files", command="files-mcp")])
>>> pool.shared("files") is pool.shared("files")
True
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from agent_core.mcp.backoff import Backoff
from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.connection import McpConnection

PersonalFactory = Callable[[McpServerConfig, str, str], McpConnection]
"""``(server, person, workspace) -> McpConnection`` signed in as that person."""


class McpConnections:
    """The sessions of one process; see the module docstring.

    >>> McpConnections([McpServerConfig(name="f", command="f-mcp")]).opened()
    []
    """

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        personal: PersonalFactory | None = None,
        environ: Mapping[str, str] | None = None,
        backoff: Callable[[], Backoff] = Backoff,
        max_personal: int = 256,
        idle_after: float = 900.0,
        on_tools_changed: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.servers = {server.name: server for server in servers}
        self._personal_factory = personal
        self._environ = environ
        self._backoff = backoff
        self.max_personal = max_personal
        self.idle_after = idle_after
        self._on_tools_changed = on_tools_changed
        self._clock = clock
        self._shared: dict[str, McpConnection] = {}
        self._personal: OrderedDict[tuple[str, str], tuple[McpConnection, float]] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()

    def _changed(self, server: str) -> Callable[[], None]:
        def changed() -> None:
            if self._on_tools_changed is not None:
                self._on_tools_changed(server)

        return changed

    def shared(self, name: str) -> McpConnection:
        """The one session of server ``name`` (not for ``auth = "user"`` servers)."""
        server = self.servers[name]
        if server.auth == "user":
            raise ValueError(f"{name} signs each person in: use personal()")
        connection = self._shared.get(name)
        if connection is None:
            connection = self._shared[name] = McpConnection(
                server,
                backoff=self._backoff(),
                environ=self._environ,
                on_tools_changed=self._changed(name),
            )
        return connection

    def personal(self, name: str, person: str, workspace: str) -> McpConnection:
        """``person``'s own session to server ``name`` (made on first use)."""
        if self._personal_factory is None:
            raise ValueError("this process keeps no personal sessions (no token key)")
        self._sweep()
        key = (name, person)
        found = self._personal.get(key)
        if found is not None and found[0].state != "closed":
            self._personal[key] = (found[0], self._clock())
            self._personal.move_to_end(key)
            return found[0]
        connection = self._personal_factory(self.servers[name], person, workspace)
        self._personal[key] = (connection, self._clock())
        while len(self._personal) > self.max_personal:
            _, (oldest, _) = self._personal.popitem(last=False)
            self._close_later(oldest)
        return connection

    def existing(self, name: str, person: str) -> McpConnection | None:
        """``person``'s session to ``name`` if one was made (none is made here)."""
        found = self._personal.get((name, person))
        return None if found is None else found[0]

    def personal_sessions(self) -> int:
        return len(self._personal)

    def forget(self, name: str, person: str) -> None:
        """Close ``person``'s session to ``name`` (they connected anew, or disconnected)."""
        found = self._personal.pop((name, person), None)
        if found is not None:
            self._close_later(found[0])

    def _sweep(self) -> None:
        """Close people's sessions unused for ``idle_after`` seconds."""
        now = self._clock()
        for key, (connection, used) in list(self._personal.items()):
            if now - used < self.idle_after:
                break  # ordered by last use
            del self._personal[key]
            self._close_later(connection)

    def _close_later(self, connection: McpConnection) -> None:
        task = asyncio.get_running_loop().create_task(connection.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def opened(self) -> list[McpConnection]:
        """Every session made so far (shared and personal)."""
        return [*self._shared.values(), *(c for c, _ in self._personal.values())]

    async def aclose(self) -> None:
        """End every session; stdio servers' processes are stopped and reaped."""
        connections = self.opened()
        self._shared.clear()
        self._personal.clear()
        await asyncio.gather(*(c.aclose() for c in connections), *self._closing)
