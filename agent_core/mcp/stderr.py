"""``ServerStderr``: what a stdio server writes to its stderr, in the bot's log, masked and
bounded.

A server's process would otherwise write straight into the bot's own stderr: a stack trace
with its database URL, a token it was started with, or megabytes of noise. Instead its
stderr is a pipe read here, line by line: each line is cut to ``MAX_LINE_CHARS``, masked
(the server's configured secrets and any URL's password, ``McpMasker``) and logged at INFO
as ``mcp <server>: <line>``, at most ``MAX_LINES`` lines a minute (then once, how many were
left out).

>>> import asyncio
>>> async def demo() -> None:
...     stderr = ServerStderr("files", ["s3cr3t-value"])
...     with stderr.file() as errlog:
...         print("token s3cr3t-value", file=errlog, flush=True)
...     await stderr.drained()
...     print(stderr.lines)
>>> asyncio.run(demo())
['token ********']
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from agent_core.mcp.masking import McpMasker

MAX_LINE_CHARS = 500
MAX_LINES = 100
"""Lines of one server's stderr logged a minute; the rest are counted, not logged."""
KEPT_LINES = 20
"""The latest logged lines kept for ``lines`` (doctor and tests read them)."""

logger = logging.getLogger(__name__)


class ServerStderr:
    """Reads one stdio server's stderr into the log; see the module docstring.

    >>> ServerStderr("files").lines
    []
    """

    def __init__(
        self,
        server: str,
        secrets: Iterable[str] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self._masker = McpMasker(secrets)
        self._clock = clock
        self._window = (clock(), 0)
        self._dropped = 0
        self.lines: list[str] = []
        """The latest lines logged (masked and cut), oldest first."""
        self._reader: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def file(self) -> Iterator[TextIO]:
        """The write end, to give the process as its stderr: closed here on exit (the
        process keeps its own copy), so the reader ends when the process does."""
        read, write = os.pipe()
        self._reader = asyncio.get_running_loop().create_task(self._read(read))
        errlog = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        try:
            yield errlog
        finally:
            errlog.close()

    async def drained(self) -> None:
        """Wait until everything written (by every process holding the pipe) was read."""
        if self._reader is not None:
            await asyncio.shield(self._reader)

    async def close(self, timeout: float = 5.0) -> None:
        """Read what is left, for ``timeout`` s at most (a stray process may hold the pipe),
        then stop reading."""
        reader = self._reader
        if reader is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), timeout)
        if not reader.done():
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _read(self, descriptor: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_CHARS * 8)
        pipe = os.fdopen(descriptor, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # longer than the reader holds: dropped, unread
                    self._line(f"[a line over {MAX_LINE_CHARS * 8:,} bytes, left out]")
                    continue
                if not line:
                    break
                self._line(line.decode("utf-8", "replace").rstrip())
        finally:
            transport.close()
            self._flush_dropped()

    def _line(self, text: str) -> None:
        if not text:
            return
        started, count = self._window
        now = self._clock()
        if now - started >= 60:
            self._flush_dropped()
            started, count = now, 0
        if count >= MAX_LINES:
            self._dropped += 1
            self._window = (started, count)
            return
        self._window = (started, count + 1)
        shown = self._masker.mask(text)[:MAX_LINE_CHARS]
        self.lines = [*self.lines[-(KEPT_LINES - 1) :], shown]
        logger.info("mcp %s: %s", self.server, shown)

    def _flush_dropped(self) -> None:
        if self._dropped:
            logger.info(
                "mcp %s: %d more lines of its stderr left out (over %d a minute)",
                self.server,
                self._dropped,
                MAX_LINES,
            )
            self._dropped = 0
