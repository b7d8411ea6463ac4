"""``TurnFeed``: the events of one turn, in order, for the page's Server-Sent Events stream.

Four event names reach the page::

    turn       {"state": "started" | "done" | "stopped" | "failed", ...}
    component  a UiComponent version as the agent yielded it (the developer's raw view)
    slack      what the Slack adapter did: a message posted/updated/deleted, an ephemeral
               message, the thread's status line, an uploaded file (see ``slack_view``)
    teams      what the Teams adapter sent: messages, updates, typing, streaming, targeted
               and 1:1 messages (see ``teams_view``)

>>> feed = TurnFeed()
>>> feed.emit("turn", {"state": "started"})
>>> sse("turn", {"state": "started"})
b'event: turn\\ndata: {"state":"started"}\\n\\n'
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

_END = object()


def sse(event: str, data: Any) -> bytes:
    """One Server-Sent Event (JSON data on one line)."""
    payload = json.dumps(data, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {payload}\n\n".encode()


class TurnFeed:
    """A single-consumer queue of ``(event, data)``; ``close`` ends the iteration."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[str, Any] | object] = asyncio.Queue()
        self.closed = False
        self.count = 0

    def emit(self, event: str, data: Any) -> None:
        if not self.closed:
            self.count += 1
            self._queue.put_nowait((event, data))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(_END)

    async def __aiter__(self) -> AsyncIterator[tuple[str, Any]]:
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            assert isinstance(item, tuple)
            yield item
