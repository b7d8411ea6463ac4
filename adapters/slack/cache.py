"""A small async key/value cache with TTLs: identity caching and event dedupe share it.

``TtlCache`` is the seam: the in-memory ``MemoryTtlCache`` serves one process; a Redis
implementation (``SET key value EX ttl`` / ``SET NX``) slots in for many processes without
touching its users.

>>> import asyncio
>>> cache = MemoryTtlCache()
>>> asyncio.run(cache.add("event:Ev1", ttl=60)), asyncio.run(cache.add("event:Ev1", ttl=60))
(True, False)
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class TtlCache(ABC):
    """Async get/set/add/delete with per-key expiry; values are JSON-compatible."""

    @abstractmethod
    async def get(self, key: str) -> Any | None: ...

    @abstractmethod
    async def set(self, key: str, value: Any, *, ttl: float) -> None: ...

    @abstractmethod
    async def add(self, key: str, *, ttl: float, value: Any = True) -> bool:
        """Store ``key`` only if absent (or expired); True when this call stored it."""

    @abstractmethod
    async def delete(self, key: str) -> None: ...


class MemoryTtlCache(TtlCache):
    """One process's cache; holds at most ``max_entries`` (oldest evicted first).

    >>> import asyncio
    >>> now = [0.0]
    >>> cache = MemoryTtlCache(clock=lambda: now[0])
    >>> asyncio.run(cache.set("k", 1, ttl=10))
    >>> now[0] = 11.0
    >>> asyncio.run(cache.get("k")) is None
    True
    """

    def __init__(
        self, *, max_entries: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock

    def _live(self, key: str) -> tuple[float, Any] | None:
        entry = self._entries.get(key)
        if entry is not None and entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry

    def _store(self, key: str, value: Any, ttl: float) -> None:
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    async def get(self, key: str) -> Any | None:
        entry = self._live(key)
        return None if entry is None else entry[1]

    async def set(self, key: str, value: Any, *, ttl: float) -> None:
        self._store(key, value, ttl)

    async def add(self, key: str, *, ttl: float, value: Any = True) -> bool:
        if self._live(key) is not None:
            return False
        self._store(key, value, ttl)
        return True

    async def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
