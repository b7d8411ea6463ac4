"""Raw HTTP for hostile-input tests: an event loop in a thread (so ``hypothesis``' plain
functions can drive an aiohttp app), and a POST of exact bytes over a socket (any header
bytes, no client-side checks)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running in a daemon thread; ``run(coro)`` waits for its result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, work: Awaitable[T], timeout: float = 60.0) -> T:
        async def wrapped() -> T:
            return await work

        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@contextlib.contextmanager
def served(
    open_app: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
) -> Iterator[tuple[LoopThread, Any]]:
    """Enter ``open_app()`` on a loop thread; yields the thread and what it yielded."""
    thread = LoopThread()
    stack = contextlib.AsyncExitStack()
    try:
        value = thread.run(stack.enter_async_context(open_app()))
        yield thread, value
    finally:
        with contextlib.suppress(Exception):
            thread.run(stack.aclose())
        thread.close()


def post(port: int, path: str, body: bytes, headers: Sequence[tuple[bytes, bytes]]) -> int:
    """POST exactly ``body`` with exactly ``headers``; the response's status code."""
    head = [
        f"POST {path} HTTP/1.1".encode(),
        b"Host: 127.0.0.1",
        b"Connection: close",
        b"Content-Length: " + str(len(body)).encode(),
        *(name + b": " + value for name, value in headers),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        received = b""
        while b"\r\n" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
    return int(received.split(b" ", 2)[1])
