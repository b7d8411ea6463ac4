"""How Threadline reaches one MCP server: the SDK's ``Client`` over stdio or streamable HTTP.

- stdio: the configured ``command`` is started in its own process group with a small
  environment (the SDK's HOME, PATH... plus the server's ``env`` and ``env_from``; never
  the bot's own secrets), its stderr read into the log masked and bounded
  (``ServerStderr``), and stopped (stdin closed, then SIGTERM, then SIGKILL to the whole
  group) when the session ends;
- HTTP: an ``httpx2`` client with the server's headers, its bearer token or the person's
  OAuth (``auth``), a cap on one message's size, and a watch for the server forgetting the
  session (``404`` on a request carrying ``Mcp-Session-Id``).

Either way the read side is watched: when it ends (the process died, the connection
closed) ``on_end`` is told at once, so a crashed server is restarted without waiting for
someone's call to fail.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Self

from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.stderr import ServerStderr

if TYPE_CHECKING:
    from types import TracebackType

    import httpx2
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

SESSION_HEADER = "mcp-session-id"
USER_AGENT = "threadline-mcp"


def child_environment(
    server: McpServerConfig, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a stdio server's process: the SDK's safe defaults, the
    variables ``env_from`` names (from the bot's environment) and the server's ``env``.

    >>> server = McpServerConfig(name="f", command="f", env={"ROOT": "/srv"}, env_from=["TZ"])
    >>> found = child_environment(server, {"TZ": "UTC", "SLACK_BOT_TOKEN": "x"})
    >>> found["ROOT"], found["TZ"], "SLACK_BOT_TOKEN" in found
    ('/srv', 'UTC', False)
    """
    from mcp.client.stdio import get_default_environment

    variables = os.environ if environ is None else environ
    chosen = {name: variables[name] for name in server.env_from if name in variables}
    own = {name: value.get_secret_value() for name, value in server.env.items()}
    return {**get_default_environment(), **chosen, **own}


class WatchedRead:
    """A transport's read stream that says when it ends (``on_end``), else the same.

    >>> WatchedRead(None, lambda: None).last_context is None
    True
    """

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the HTTP transport's per-message context, passed on
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self._inner.aclose()
        return None


@contextlib.asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read_stream, write_stream):
        yield WatchedRead(read_stream, on_end), write_stream


def _capped(limit: int) -> Any:
    """An HTTP transport whose responses stop being read past ``limit`` bytes (a server's
    megabytes are refused, not held in memory: the SDK reads a JSON reply whole)."""
    import httpx2

    class TooLarge(httpx2.StreamError):
        pass

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async for chunk in self._inner:
                read += len(chunk)
                if read > limit:
                    raise TooLarge(f"the server's reply is larger than {limit / 1e6:g} MB")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await self._inner.handle_async_request(request)
            response.stream = Capped(response.stream)
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedTransport()


def _http_client(
    server: McpServerConfig,
    *,
    auth: httpx2.Auth | None,
    on_forgotten: Callable[[], None],
    environ: Mapping[str, str] | None,
) -> httpx2.AsyncClient:
    import httpx2

    headers = {"User-Agent": USER_AGENT}
    headers.update({name: value.get_secret_value() for name, value in server.headers.items()})
    token = server.bearer_token(environ)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"

    async def watch(response: httpx2.Response) -> None:
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            on_forgotten()

    return httpx2.AsyncClient(
        headers=headers,
        auth=auth,
        transport=_capped(int(server.max_response_mb * 1_000_000)),
        timeout=httpx2.Timeout(server.connect_timeout, read=max(300.0, server.call_timeout)),
        event_hooks={"response": [watch]},
    )


@contextlib.asynccontextmanager
async def open_session(
    server: McpServerConfig,
    *,
    on_end: Callable[[], None],
    on_forgotten: Callable[[], None] = lambda: None,
    message_handler: MessageHandlerFnT | None = None,
    auth: httpx2.Auth | None = None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[Client]:
    """A connected ``Client`` for ``server`` (handshake done), closed on exit."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    async with contextlib.AsyncExitStack() as stack:
        if server.command is not None:
            parameters = StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=child_environment(server, environ),
            )
            stderr = ServerStderr(server.name, server.secrets(environ))
            stack.push_async_callback(stderr.close)  # after the process and our write end
            inner: Any = stdio_client(parameters, errlog=stack.enter_context(stderr.file()))
        else:
            assert server.url is not None
            http = await stack.enter_async_context(
                _http_client(server, auth=auth, on_forgotten=on_forgotten, environ=environ)
            )
            inner = streamable_http_client(
                server.url,
                http_client=http,
                max_sse_event_size=int(server.max_response_mb * 1_000_000),
            )
        client = Client(
            _watched(inner, on_end),
            mode=server.protocol,
            message_handler=message_handler,
            client_info=Implementation(name="threadline", version="1"),
            cache=None,
        )
        yield await stack.enter_async_context(client)
