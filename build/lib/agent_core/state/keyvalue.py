"""``KeyValueStore``: small async key/value state with optional expiry.

One interface serves three needs: identity caches (``ttl`` = minutes), delivery dedupe keys
(``add`` = store only if absent) and durable records such as Slack installations and Teams
conversation references (``ttl=None``). Values are JSON-compatible and come back as fresh
copies, whichever backend holds them (memory, SQLite, Redis).

The channel adapters take it wherever they keep ids or caches (Slack threads and
installations, Teams deliveries and conversation references).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class KeyValueStore(ABC):
    """Async ``get`` / ``set`` / ``add`` / ``delete``; ``ttl`` in seconds, ``None`` = keep.

    >>> import asyncio
    >>> store = MemoryKeyValueStore()
    >>> asyncio.run(store.set("teams:ref:T1:U1", {"serviceUrl": "https://smba.example"}))
    >>> asyncio.run(store.get("teams:ref:T1:U1"))["serviceUrl"]
    'https://smba.example'
    """

    @abstractmethod
    async def get(self, key: str) -> Any | None:
        """The stored value, or ``None`` when absent or expired."""

    @abstractmethod
    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store ``value`` (replacing any), expiring after ``ttl`` seconds when given."""

    @abstractmethod
    async def add(self, key: str, value: Any = True, *, ttl: float | None = None) -> bool:
        """Store ``key`` only if absent (or expired); True when this call stored it."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""

    async def close(self) -> None:
        """Release connections or threads this store owns (nothing by default)."""
        return None


def encode(value: Any) -> str:
    """JSON text of ``value``; raises ``TypeError`` for values no backend could keep."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class MemoryKeyValueStore(KeyValueStore):
    """One process's store (tests, ``--ephemeral``); at most ``max_entries``, oldest evicted.

    >>> import asyncio
    >>> now = [0.0]
    >>> store = MemoryKeyValueStore(clock=lambda: now[0])
    >>> asyncio.run(store.add("event:Ev1", ttl=60)), asyncio.run(store.add("event:Ev1", ttl=60))
    (True, False)
    >>> now[0] = 61.0
    >>> asyncio.run(store.add("event:Ev1", ttl=60))
    True
    """

    def __init__(
        self, *, max_entries: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._entries: OrderedDict[str, tuple[float | None, str]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock

    def _live(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, text = entry
        if expires_at is not None and expires_at <= self._clock():
            del self._entries[key]
            return None
        return text

    def _store(self, key: str, value: Any, ttl: float | None) -> None:
        expires_at = None if ttl is None else self._clock() + ttl
        self._entries[key] = (expires_at, encode(value))
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    async def get(self, key: str) -> Any | None:
        text = self._live(key)
        return None if text is None else json.loads(text)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        self._store(key, value, ttl)

    async def add(self, key: str, value: Any = True, *, ttl: float | None = None) -> bool:
        if self._live(key) is not None:
            return False
        self._store(key, value, ttl)
        return True

    async def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
