"""``Loopback``: an ASGI app (an MCP server, an authorization server) on a free 127.0.0.1 port,
served by uvicorn in a thread of its own, for tests, benchmarks and the console's demo.

Readiness is polled (a TCP connect) with a deadline: the one place a test waits on a server.

>>> with Loopback(_hello) as server:
...     import urllib.request
...     urllib.request.urlopen(server.url + "/").read()
b'hello'
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

from agent_core.state.testing import free_port


async def _hello(scope: Any, receive: Any, send: Any) -> None:
    """The smallest ASGI app (the docstring's example)."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


class Loopback:
    """Serves ``app`` on ``http://127.0.0.1:<port>`` while entered (or between ``start`` and
    ``stop``); ``port`` is a free one unless given.

    >>> Loopback(_hello, port=8999).url
    'http://127.0.0.1:8999'
    """

    def __init__(self, app: Any, *, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> None:
        import uvicorn

        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve()), name="mcp-loopback", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the loopback server on port {self.port} did not start")
            time.sleep(0.01)
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout):
            pass

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=0.5)
            if self._thread.is_alive() and self._server is not None:
                # a client still holds a stream open (an MCP session's GET, closed only after
                # this returns): end it instead of waiting 15 s for it
                self._server.force_exit = True
                self._thread.join(timeout=15)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.stop()
