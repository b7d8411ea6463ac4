"""``KeyValueStore``: small async key/value state with optional expiry.

One interface serves four needs: identity caches (``ttl`` = minutes), delivery dedupe keys
(``add`` = store only if absent), durable records such as Slack installations and Teams
conversation references (``ttl=None``), and short logs such as the messages of a Slack
thread (``append``: a bounded list under a key, newest kept; a key holds a value or a log,
never both). Values are JSON-compatible and come back as fresh
copies, whichever backend holds them (memory, SQLite, Redis). Several keys are read in one
step with ``get_many``, and written in one with ``write_all`` (``Put``, ``Push``): one round
trip on Redis, one transaction on SQLite.

The channel adapters take it wherever they keep ids or caches (Slack threads and
installations, Teams deliveries and conversation references).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


@dataclass(frozen=True)
class Put:
    """One of ``KeyValueStore.write_all``'s writes: ``set`` the key, or ``add`` it
    (``only_new``: only if absent; whether it was is not told).

    >>> Put("approval:swept:slack", 29_000_000, ttl=60, only_new=True).only_new
    True
    """

    key: str
    value: Any
    ttl: float | None = None
    only_new: bool = False


@dataclass(frozen=True)
class Push:
    """One of ``KeyValueStore.write_all``'s writes: ``append`` ``items`` to a log, keep its
    newest ``keep`` (the log is not read back).

    >>> Push("approval:open:slack:T1", ["a1"], keep=200).keep
    200
    """

    key: str
    items: list[Any]
    keep: int
    ttl: float | None = None

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"a log keeps at least one item, not {self.keep}")


class KeyValueStore(ABC):
    """Async ``get`` / ``set`` / ``add`` / ``delete``; ``ttl`` in seconds, ``None`` = keep.

    >>> import asyncio
    >>> store = MemoryKeyValueStore()
    >>> asyncio.run(store.set("teams:ref:T1:U1", {"serviceUrl": "https://smba.example"}))
    >>> asyncio.run(store.get("teams:ref:T1:U1"))["serviceUrl"]
    'https://smba.example'
    """

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This store as the running turn whose writes are ``writes`` uses it: itself, but
        on Redis (``agent_core.state.turn_writes``)."""
        return self

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

    async def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        """The values of ``keys``, in order (``None`` where absent or expired): one read
        where the back end allows (Redis: ``MGET``; SQLite: one query).

        >>> import asyncio
        >>> store = MemoryKeyValueStore()
        >>> asyncio.run(store.set("a", 1))
        >>> asyncio.run(store.get_many(["a", "b"]))
        [1, None]
        """
        return [await self.get(key) for key in keys]

    async def write_all(self, writes: Sequence[Put | Push]) -> None:
        """Make ``writes`` in order, in one atomic step where the back end allows (Redis:
        one ``MULTI``; SQLite: one transaction): what ``set``, ``add`` and ``append`` would,
        without telling whether an ``add`` added nor reading a log back.

        >>> import asyncio
        >>> store = MemoryKeyValueStore()
        >>> asyncio.run(store.write_all([Put("a", 1), Push("log", [1, 2], keep=1)]))
        >>> asyncio.run(store.get_many(["a", "log"]))
        [1, [2]]
        """
        for write in writes:
            if isinstance(write, Push):
                await self.append(write.key, write.items, keep=write.keep, ttl=write.ttl)
            elif write.only_new:
                await self.add(write.key, write.value, ttl=write.ttl)
            else:
                await self.set(write.key, write.value, ttl=write.ttl)

    async def keys(self, pattern: str) -> list[str]:
        """The live keys matching the glob ``pattern`` (``*``, ``?``), for erasing a
        person or a workspace (``agent_core.forget``); a scan, never on a turn's path."""
        raise NotImplementedError(f"{type(self).__name__} cannot list its keys")

    async def append(
        self, key: str, items: list[Any], *, keep: int, ttl: float | None = None
    ) -> list[Any]:
        """Add ``items`` to the log under ``key`` (one atomic step), keep its newest ``keep``
        items and (re)start its ``ttl``; the whole log, oldest first. ``items=[]`` reads it.

        >>> import asyncio
        >>> store = MemoryKeyValueStore()
        >>> asyncio.run(store.append("log", [1, 2, 3], keep=2, ttl=60))
        [2, 3]
        """
        if keep < 1:
            raise ValueError(f"a log keeps at least one item, not {keep}")
        return await self._append(key, [json.loads(encode(item)) for item in items], keep, ttl)

    @abstractmethod
    async def _append(self, key: str, items: list[Any], keep: int, ttl: float | None) -> list[Any]:
        """``append`` on this back end (``items`` already JSON-checked, ``keep`` >= 1)."""

    async def close(self) -> None:
        """Release connections or threads this store owns (nothing by default)."""
        return None

    def flag(
        self,
        key: str,
        value: Any = True,
        *,
        ttl: float | None = None,
        first_payload: dict[str, Any] | None = None,
    ) -> Flag:
        """An ``add`` of ``key`` to make with a turn (``TurnQueue.enqueue(..., flag=...)``)."""
        return Flag(self, key, value, ttl, first_payload)


@dataclass
class Flag:
    """``store.add(key, value, ttl=...)``, made in the same atomic step as a turn is recorded
    (``TurnQueue.enqueue(..., flag=flag)``: one script, one transaction) when the store and
    the queue share a back end, as ``build_state`` builds them; just before it otherwise.

    ``added`` tells afterwards whether this turn added the key (it was absent); when it did,
    ``first_payload`` (if given) is what the turn records instead of its payload. A Slack
    mention joins its thread this way: the bot's flag on the thread and the turn, together.

    >>> import asyncio
    >>> from agent_core.state.turns_memory import MemoryTurnQueue
    >>> cache, queue = MemoryKeyValueStore(), MemoryTurnQueue()
    >>> async def twice():
    ...     for n in range(2):
    ...         flag = cache.flag("thread:1", first_payload={"text": "hi", "first": True})
    ...         await queue.enqueue("thread:1", {"text": "hi"}, flag=flag)
    ...         yield flag.added
    >>> async def run():
    ...     return [added async for added in twice()]
    >>> asyncio.run(run())
    [True, False]
    """

    store: KeyValueStore
    key: str
    value: Any = True
    ttl: float | None = None
    first_payload: dict[str, Any] | None = None
    added: bool | None = None

    async def add(self) -> bool:
        """Add the key on its own (back ends that cannot fold it into the enqueue)."""
        self.added = await self.store.add(self.key, self.value, ttl=self.ttl)
        return self.added

    def payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """What the turn records, once ``added`` is known."""
        return self.first_payload if self.added and self.first_payload is not None else payload


_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def encode(value: Any) -> str:
    """JSON text of ``value``; raises ``TypeError`` for values no backend could keep.

    >>> encode({"b": 1, "a": [True, None]})
    '{"a":[true,null],"b":1}'
    """
    return _JSON.encode(value)


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

    async def keys(self, pattern: str) -> list[str]:
        import fnmatch

        return [key for key in list(self._entries) if fnmatch.fnmatchcase(key, pattern)]

    async def _append(self, key: str, items: list[Any], keep: int, ttl: float | None) -> list[Any]:
        text = self._live(key)
        log: list[Any] = [] if text is None else json.loads(text)
        log = (log + items)[-keep:]
        if items:
            self._store(key, log, ttl)
        copy: list[Any] = json.loads(encode(log))
        return copy

    def __len__(self) -> int:
        return len(self._entries)
