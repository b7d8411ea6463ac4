"""What Redis runs, seen by ``MONITOR``: round trips and commands by name, commands run
inside Lua scripts, and completed turns (the ``XDEL`` a turn's completion script runs).

A command a client sends is one round trip (a Lua script is one, a ``MULTI ... EXEC`` block
is one); ``commands`` counts every command a client sends, including those inside a
``MULTI`` block. ``MONITOR`` slows Redis down: measure with it in its own window only.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent_core.state import connect_redis


@dataclass
class Tally:
    round_trips: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    in_scripts: int = 0
    completed: int = 0
    enqueued_at: list[int] = field(default_factory=list)
    """The round trips made when each turn was recorded (its script's ``XADD``)."""
    _in_multi: set[str] = field(default_factory=set)

    def see(self, command: dict[str, Any]) -> None:
        name = str(command.get("command", "")).split(" ")[0].upper()
        client = f"{command.get('client_address')}:{command.get('client_port')}"
        if command.get("client_type") == "lua":
            self.in_scripts += 1
            self.completed += name == "XDEL"
            if name == "XADD":
                self.enqueued_at.append(sum(self.round_trips.values()))
            return
        if name == "MONITOR":
            return
        self.commands[name] += 1
        if name == "MULTI":
            self._in_multi.add(client)
            self.round_trips["MULTI..EXEC"] += 1
        elif name == "EXEC":
            self._in_multi.discard(client)
        elif client not in self._in_multi:
            self.round_trips[name] += 1

    def snapshot(self) -> tuple[Counter[str], int, int]:
        return Counter(self.round_trips), self.in_scripts, self.completed


class Monitor:
    """A ``MONITOR`` connection feeding a ``Tally``; ``changed`` fires on every command."""

    def __init__(self, url: str) -> None:
        self.tally = Tally()
        self.changed = asyncio.Event()
        self._client = connect_redis(url)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        started = asyncio.Event()

        async def listen() -> None:
            async with self._client.monitor() as monitor:
                started.set()
                async for command in monitor.listen():
                    self.tally.see(command)
                    self.changed.set()

        self._task = asyncio.create_task(listen())
        await asyncio.wait_for(started.wait(), 10)

    async def until_completed(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while self.tally.completed < count:
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{count - self.tally.completed} turn(s) never completed")
            await asyncio.wait_for(self.changed.wait(), left)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._client.aclose()
