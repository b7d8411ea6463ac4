"""The console's slots (``bots.turns.Slot``): its queue is in memory, so it keeps no answer
across runs; there is nothing to record again or to settle."""

from __future__ import annotations

from bots.turns import Posted


class NoSlot:
    """A page turn's slot: nothing kept, nothing to take back.

    >>> NoSlot().current is None
    True
    """

    unrecorded = False
    current: Posted | None = None

    async def record_again(self) -> bool:
        return True

    async def settle(self, text: str) -> None:
        return None
