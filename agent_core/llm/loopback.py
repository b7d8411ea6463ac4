"""A minimal HTTP/1.1 server on 127.0.0.1, for the fake Messages API (``llm.testing``).

``agent_core`` imports no web framework (see DESIGN: import rule), so the fake speaks HTTP
itself: keep-alive requests with a ``Content-Length`` or chunked body, answered whole or
streamed as chunks. Enough for any HTTP client pointed at a fake; not a general server.

>>> import asyncio, json, urllib.request
>>> async def hello(request: HttpRequest, response: HttpResponse) -> None:
...     await response.send(200, {"Content-Type": "text/plain"}, request.path.encode())
>>> async def demo() -> str:
...     async with LoopbackServer(hello) as server:
...         url = server.base_url + "/v1/ping"
...         reply = await asyncio.to_thread(urllib.request.urlopen, url)
...         return reply.read().decode()
>>> asyncio.run(demo())
'/v1/ping'
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Self

HEAD_LIMIT = 64 * 1024


@dataclass
class HttpRequest:
    """One request: ``headers`` keep the names as the client spelled them."""

    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def header(self, name: str, default: str = "") -> str:
        """A header's value, whatever the case of its name."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), default)


class HttpResponse:
    """What a handler answers: ``send`` a whole body, or ``start`` then ``write`` chunks."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.started = False
        self.streaming = False

    async def send(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        await self._head(status, {**headers, "Content-Length": str(len(body))})
        self._writer.write(body)
        await self._writer.drain()

    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        """Begin a streamed (chunked) body; ``write`` each piece as it is ready."""
        self.streaming = True
        await self._head(status, {**headers, "Transfer-Encoding": "chunked"})

    async def write(self, chunk: bytes) -> None:
        if chunk:
            self._writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
            await self._writer.drain()

    async def end(self) -> None:
        if self.streaming:
            self.streaming = False
            self._writer.write(b"0\r\n\r\n")
            await self._writer.drain()

    async def _head(self, status: int, headers: Mapping[str, str]) -> None:
        self.started = True
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers.items())]
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))


Handler = Callable[[HttpRequest, HttpResponse], Awaitable[None]]


class LoopbackServer:
    """Serves ``handler`` on a free port of 127.0.0.1 until ``close``."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._connection, "127.0.0.1", 0, limit=HEAD_LIMIT
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection (a handler still running gets 1 s)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in self._connections.values():  # kept-alive connections read EOF and end
            writer.close()
        if self._connections:
            _, stuck = await asyncio.wait(self._connections, timeout=1.0)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*stuck, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        try:
            while (request := await _read_request(reader, writer)) is not None:
                response = HttpResponse(writer)
                if not await self._answer(request, response):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away, or sent something this server does not speak
        except asyncio.CancelledError:
            pass  # ``close``: end quietly (asyncio 3.11 logs connection tasks that end cancelled)
        finally:
            self._connections.pop(task, None)
            writer.close()

    async def _answer(self, request: HttpRequest, response: HttpResponse) -> bool:
        """Run the handler; True when the connection can carry another request."""
        try:
            await self._handler(request, response)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as error:  # a bug in the handler: say so to the client
            if response.started:
                return False
            await response.send(500, {"Content-Type": "text/plain"}, repr(error).encode())
        if not response.started:
            await response.send(500, {}, b"the handler sent no response")
        await response.end()
        return request.header("Connection").lower() != "close"


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> HttpRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise
        return None  # the client closed a kept-alive connection
    request_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    path, _, query = target.partition("?")
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    request = HttpRequest(method, path, query, headers)
    if request.header("Expect").lower() == "100-continue":  # curl, before a large body
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if request.header("Transfer-Encoding").lower() == "chunked":
        request.body = await _read_chunked(reader)
    else:
        request.body = await reader.readexactly(int(request.header("Content-Length", "0")))
    return request


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        body += await reader.readexactly(size)
        await reader.readexactly(2)
    while (await reader.readuntil(b"\r\n")) != b"\r\n":
        pass  # trailers
    return bytes(body)
