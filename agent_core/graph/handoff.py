"""``Handoff``: components from the graph task to the ``send_message`` generator, one at a time.

The graph runs in its own task; its nodes ``await handoff.emit(component)``, which returns
only when the reader asks for the next component. So the graph advances exactly as fast as
the channel reads, like the plain ``Agent``'s pull-driven stages: a Stop finds the turn
where the user saw it, not several steps further.
"""

from __future__ import annotations

import asyncio

from agent_core.components import UiComponent


class Handoff:
    """A rendezvous between one producer task and one reader, built on two futures.

    >>> async def demo():
    ...     handoff = Handoff()
    ...     task = asyncio.create_task(handoff.emit("a"))
    ...     task.add_done_callback(handoff.close)
    ...     seen = []
    ...     while (item := await handoff.next()) is not None:
    ...         seen.append(item)
    ...         handoff.taken()
    ...     return seen
    >>> asyncio.run(demo())
    ['a']
    """

    __slots__ = ("_closed", "_loop", "_ready", "_taken")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[UiComponent | None] = self._loop.create_future()
        self._taken: asyncio.Future[None] | None = None
        self._closed = False

    async def emit(self, component: UiComponent) -> None:
        """Hand ``component`` over; returns once the reader has moved past it."""
        taken = self._taken = self._loop.create_future()
        self._ready.set_result(component)
        await taken

    async def next(self) -> UiComponent | None:
        """The next component, or None once the producer is done."""
        component = await self._ready
        if component is not None:
            self._ready = self._loop.create_future()
            if self._closed:  # the producer ended while this one was being read
                self._ready.set_result(None)
        return component

    def taken(self) -> None:
        """The reader is done with the last component: let the producer continue."""
        if self._taken is not None and not self._taken.done():
            self._taken.set_result(None)

    def close(self, _task: object = None) -> None:
        """The producer is done (usable as a task done-callback)."""
        self._closed = True
        if not self._ready.done():
            self._ready.set_result(None)
