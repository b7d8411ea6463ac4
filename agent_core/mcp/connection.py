"""``McpConnection``: one MCP session kept up for the process, supervised.

The session is opened on first use, by a task of its own that holds it open (the SDK's
sessions must be entered and left by one task) and reused by every call after. When it ends
without being asked to (the server's process died, the connection closed, the HTTP server
forgot the session), the same task opens it again, waiting longer after each failure in a
row (``Backoff``); meanwhile calls fail at once, saying the server is unavailable, and the
server's tools are left out of turns. ``aclose`` ends it for good: a stdio server's process
group is stopped and reaped, nothing is left running.

The tools the server lists are kept until it says they changed (``tools/list_changed``:
a notification on handshake-era sessions, a ``subscriptions/listen`` stream on 2026 ones).

>>> from agent_core.mcp.config import McpServerConfig
>>> McpConnection(McpServerConfig(name="files", command="files-mcp")).state
'idle'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from agent_core.clock import SYSTEM_CLOCK
from agent_core.mcp.backoff import Backoff
from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.errors import (
    McpError,
    McpUnavailable,
    SignInRequired,
    translate,
)

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.types import CallToolResult, Tool

logger = logging.getLogger(__name__)

State = Literal["idle", "connecting", "up", "down", "signed_out", "closed"]
MAX_TOOL_PAGES = 20
"""Pages of ``tools/list`` read at most (a listing that never ends cannot hang a turn)."""
MAX_TOOLS = 500


class McpConnection:
    """One server's session (or one person's session to a server); see the module docstring.

    ``auth`` signs HTTP requests (a person's OAuth) and ``pending_sign_in`` says when it
    found the person must sign in again; ``on_tools_changed`` is told when the server's
    tools changed (or its session was replaced), so offers are refreshed.

    >>> McpConnection(McpServerConfig(name="files", command="files-mcp")).state
    'idle'
    """

    def __init__(
        self,
        server: McpServerConfig,
        *,
        auth: httpx2.Auth | None = None,
        pending_sign_in: Callable[[], SignInRequired | None] | None = None,
        backoff: Backoff | None = None,
        environ: Mapping[str, str] | None = None,
        on_tools_changed: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self._auth = auth
        self._pending_sign_in = pending_sign_in or (lambda: None)
        self._backoff = backoff or Backoff()
        self._environ = environ
        self._on_tools_changed = on_tools_changed
        self._clock = clock
        self._client: Client | None = None
        self._ready: asyncio.Future[Client] | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ended = asyncio.Event()
        self._stopping = asyncio.Event()
        self._closing = False
        self._forgotten: int | None = None
        """The session (by number) the server said it no longer knows."""
        self._reopened = False
        """A forgotten session was replaced at once, and no call succeeded since (the next
        one waits its turn: a server forgetting every session is not hammered)."""
        self._down_until = 0.0
        self._up_since = 0.0
        self._tools: list[Tool] | None = None
        self._listing = asyncio.Lock()
        self.last_error: McpError | None = None
        self.sessions = 0
        """Sessions opened so far (the first, then each restart)."""

    # -- state ----------------------------------------------------------------------------

    @property
    def state(self) -> State:
        if self._closing:
            return "closed"
        if self._client is not None:
            return "up"
        if isinstance(self.last_error, SignInRequired):
            return "signed_out"
        if self._owner is None:
            return "idle"
        if self._ready is not None and not self._ready.done():
            return "connecting"
        return "down"

    def retry_in(self) -> float:
        """Seconds until the next attempt to open the session (0: now)."""
        return max(0.0, self._down_until - self._clock())

    # -- the session ----------------------------------------------------------------------

    async def client(self) -> Client:
        """The live session, opened now if need be (one attempt at a time); raises
        ``McpUnavailable`` while the server is down, ``SignInRequired`` while the person
        must sign in."""
        if self._closing:
            raise McpUnavailable(self.server.name, "the bot is stopping")
        if self._client is not None:
            return self._client
        if isinstance(self.last_error, SignInRequired):
            if self.last_error.usable(SYSTEM_CLOCK.now()):
                raise self.last_error
            self.last_error = None  # its link expired: the person gets a new one
        if self._owner is None or self._owner.done():
            self._ready = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._supervise(), name=f"mcp:{self.server.name}")
        elif self._ready is None or self._ready.done():
            detail = self.last_error.detail if self.last_error else _ended_how(self.server)
            raise McpUnavailable(self.server.name, detail, retry_in=self.retry_in())
        try:
            return await asyncio.wait_for(
                asyncio.shield(self._ready), timeout=self.server.connect_timeout
            )
        except TimeoutError:
            raise McpUnavailable(self.server.name, "not reachable in time") from None

    async def _supervise(self) -> None:
        """Open the session, hold it until it ends, and open it again after a wait; until
        ``aclose`` (or until the person must sign in: only they can fix that)."""
        while not self._closing:
            if self._ready is None or self._ready.done():
                self._ready = asyncio.get_running_loop().create_future()
            try:
                await self._hold()
            except Exception as error:  # every failure becomes one of ours, once
                self._failed(self._sign_in_or(translate(self.server.name, error)))
            if self._closing or isinstance(self.last_error, SignInRequired):
                return
            if self._ready is not None and not self._ready.done() and not self._reopened:
                self._reopened = True  # the server forgot the session: a new one at once
                continue
            delay = self._backoff.next()
            self._down_until = self._clock() + delay
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=delay)

    async def _hold(self) -> None:
        """Open the session and keep it until it ends. Exceptions go through the session's
        own exit (a failure inside the SDK's task groups cancels this task, and only that
        exit turns the cancellation back into the failure)."""
        self._ended.clear()
        if self._closing:
            return
        ended: McpError = McpUnavailable(self.server.name, _ended_how(self.server))
        before = self.sessions
        try:
            await self._open_and_wait()
        except Exception as error:  # how the session ended, when it says
            if self.sessions == before:
                raise  # it never opened: one failure, which _supervise reports
            ended = translate(self.server.name, error)
        finally:
            self._client = None
        if self._closing:
            return
        self._backoff.up(since=self._up_since, now=self._clock())  # up long: failures forgiven
        if self._forgotten == self.sessions:
            logger.info("mcp: %s forgot its session; opening a new one", self.server.name)
            return
        self._failed(self._sign_in_or(ended))

    async def _open_and_wait(self) -> None:
        from agent_core.mcp.transport import open_session

        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(self.server.connect_timeout):
                client = await stack.enter_async_context(
                    open_session(
                        self.server,
                        on_end=self._end,
                        on_forgotten=self._forget,
                        message_handler=self._on_message,
                        auth=self._auth,
                        environ=self._environ,
                    )
                )
            if _announces(client):
                listener = asyncio.create_task(self._listen(client))
                stack.push_async_callback(_cancelled, listener)
            self._opened(client)
            await self._ended.wait()
            self._client = None

    def _opened(self, client: Client) -> None:
        self.sessions += 1
        self._client = client
        self._up_since = self._clock()
        self.last_error = None
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(client)
        if self.sessions > 1:
            logger.info("mcp: %s is up again (session %d)", self.server.name, self.sessions)
        self._changed()

    def _sign_in_or(self, error: McpError) -> McpError:
        """The person's sign-in, when that is what ended the session; else ``error``."""
        return self._pending_sign_in() or error

    def _failed(self, error: McpError) -> None:
        was_up = self.last_error is None
        self.last_error = error
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # retrieved: nobody may be waiting for this attempt
        if isinstance(error, SignInRequired):
            return
        if was_up:  # once per outage, without a traceback: a server being down is news
            logger.warning("mcp: %s", error)
        self._changed()

    def _end(self) -> None:
        """The session ended (the read side closed): calls stop using it at once."""
        self._client = None
        self._ended.set()

    def _forget(self) -> None:
        """The HTTP server answered 404 to the session's id: open a new one at once."""
        self._forgotten = self.sessions
        if not self._closing and (self._ready is None or self._ready.done()):
            self._ready = asyncio.get_running_loop().create_future()
        self._end()

    def _changed(self) -> None:
        self._tools = None
        if self._on_tools_changed is not None:
            self._on_tools_changed()

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._changed()

    async def _listen(self, client: Client) -> None:
        """2026 sessions hear of changed tools on a ``subscriptions/listen`` stream; when it
        is lost, so is the session."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    self._changed()
        except Exception as lost:  # the stream broke: open the session again
            logger.debug("mcp: %s stopped announcing tool changes: %s", self.server.name, lost)
        self._end()

    async def aclose(self) -> None:
        """End the session for good (a stdio server's process is stopped and reaped)."""
        self._closing = True
        self._stopping.set()
        self._ended.set()
        owner = self._owner
        if owner is not None and not owner.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(owner), timeout=20)
        if owner is not None and not owner.done():
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()

    # -- what the server offers and does ------------------------------------------------

    async def tools(self) -> list[Tool]:
        """The server's tools, listed once and again only after a change."""
        client = await self.client()
        async with self._listing:
            if self._tools is None:
                self._tools = await self._list(client)
            return self._tools

    async def _list(self, client: Client) -> list[Tool]:
        found: list[Tool] = []
        cursor = None
        try:
            for _ in range(MAX_TOOL_PAGES):
                async with asyncio.timeout(self.server.connect_timeout):
                    page = await client.list_tools(cursor=cursor)
                found.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None or len(found) >= MAX_TOOLS:
                    break
        except Exception as error:
            raise self._broke(error) from None
        return found[:MAX_TOOLS]

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call the server's tool ``name``; when the server had forgotten the session, the
        call is sent once more on a new one (the server never ran it)."""
        for attempt in range(2):
            client = await self.client()
            session = self.sessions
            try:
                async with asyncio.timeout(self.server.call_timeout + 5):
                    result = await client.call_tool(
                        name, arguments, read_timeout_seconds=self.server.call_timeout
                    )
                self._reopened = False
                return result
            except Exception as error:
                failure = self._broke(error)
                if attempt or self._forgotten != session:
                    raise failure from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _broke(self, error: BaseException) -> McpError:
        """``error`` as ours; a closed connection ends the session (to be opened again)."""
        failure = self._sign_in_or(translate(self.server.name, error))
        if isinstance(failure, McpUnavailable | SignInRequired):
            self._end()
        return failure


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _announces(client: Client) -> bool:
    """Whether a 2026 session should listen for changed tools (handshake-era sessions are
    told by notification instead)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = client.server_capabilities.tools
    return (
        bool(tools and tools.list_changed) and client.protocol_version in MODERN_PROTOCOL_VERSIONS
    )


def _ended_how(server: McpServerConfig) -> str:
    if server.transport == "stdio":
        return "its process exited"
    return "the connection closed"
