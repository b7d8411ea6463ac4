"""``Handoff``: each node's stage, from the graph task to the ``send_message`` generator.

The graph runs in its own task; a node hands its stage's components over with
``await handoff.run(components)`` (a streaming stage's generator, or the list a stage
returned), and the reader pulls them in its own task, exactly as the plain ``Agent`` pulls
its stages: the graph advances only as fast as the channel reads, and a Stop finds the turn
where the user saw it. ``run`` returns once the reader has taken the last of them (raising
what the stage raised), so a node costs two task switches, not two per component.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeAlias

from agent_core.components import UiComponent

Handed: TypeAlias = AsyncIterator[UiComponent] | list[UiComponent]
"""What one node hands over: a streaming stage's generator or a stage's components."""


class Handoff:
    """A rendezvous between one producer task and one reader, built on two futures.

    >>> async def demo():
    ...     handoff = Handoff()
    ...     task = asyncio.create_task(handoff.run(["a", "b"]))
    ...     task.add_done_callback(handoff.close)
    ...     seen = []
    ...     while (handed := await handoff.next()) is not None:
    ...         seen.extend(handed)
    ...         handoff.ran()
    ...     return seen
    >>> asyncio.run(demo())
    ['a', 'b']
    """

    __slots__ = ("_closed", "_loop", "_ran", "_ready")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[Handed | None] = self._loop.create_future()
        self._ran: asyncio.Future[None] | None = None
        self._closed = False

    async def run(self, handed: Handed) -> None:
        """Have the reader take ``handed``; returns once it has, or raises what it raised."""
        ran = self._ran = self._loop.create_future()
        self._ready.set_result(handed)
        await ran

    async def next(self) -> Handed | None:
        """What the next node handed over, or None once the producer is done."""
        handed = await self._ready
        if handed is not None:
            self._ready = self._loop.create_future()
            if self._closed:  # the producer ended while this was being read
                self._ready.set_result(None)
        return handed

    def ran(self, error: Exception | None = None) -> None:
        """The reader took everything handed over (or it failed with ``error``): let the
        producer continue."""
        ran = self._ran
        if ran is None or ran.done():
            return
        if error is None:
            ran.set_result(None)
        else:
            ran.set_exception(error)

    def close(self, _task: object = None) -> None:
        """The producer is done (usable as a task done-callback)."""
        self._closed = True
        if not self._ready.done():
            self._ready.set_result(None)
