"""``RedisKeyValueStore``: the key/value store shared by every process through Redis.

In the view of a turn a Redis turn worker runs (``for_turn``), a ``get`` takes the value
read as the turn started when there is one (the asker's identity in the cache, usually), an
``append`` to a log read that way is staged for the turn's next write, and the view's other
writes make such a value stale for the rest of the turn (``agent_core.state.turn_writes``).
``get_many`` is one ``MGET``, ``write_all`` one ``MULTI``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_core.state.keyvalue import KeyValueStore, Push, Put, encode
from agent_core.state.redis_client import redis_boundary
from agent_core.state.turn_writes import TurnBound

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline


def milliseconds(ttl: float | None) -> int | None:
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


class RedisKeyValueStore(TurnBound, KeyValueStore):
    """Keys live under ``key_prefix``; ``add`` is ``SET NX PX`` (atomic across processes).

    >>> import asyncio
    >>> from agent_core.state.redis_client import connect_redis
    >>> store = RedisKeyValueStore(connect_redis("redis://127.0.0.1:6379/0"),
    ...                            key_prefix="threadline:cache:")
    >>> store.key("slack:identity:user:T1:U1")
    'threadline:cache:slack:identity:user:T1:U1'
    """

    def __init__(self, redis: Redis, *, key_prefix: str = "threadline:kv:") -> None:
        self._redis = redis
        self.key_prefix = key_prefix

    def key(self, key: str) -> str:
        return f"{self.key_prefix}{key}"

    def shares(self, redis: Redis) -> bool:
        """Whether this store talks to ``redis`` (so one script can write to both)."""
        return self._redis is redis

    def _written(self, name: str) -> str:
        """``name`` is about to be written: a value read ahead for it is stale now."""
        if (turn := self._staging) is not None:
            turn.wrote(name)
        return name

    @redis_boundary
    async def keys(self, pattern: str) -> list[str]:
        start = len(self.key_prefix)
        found = self._redis.scan_iter(match=self.key(pattern), count=1000)
        return [name[start:] async for name in found]

    @redis_boundary
    async def get(self, key: str) -> Any | None:
        name = self.key(key)
        text: str | bytes | None
        found, text = False, None
        if (turn := self._staging) is not None:
            found, text = turn.read(name)  # read as the turn started (turn_writes)
        if not found:
            text = await self._redis.get(name)
        return None if text is None else json.loads(text)

    @redis_boundary
    async def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        names = [self.key(key) for key in keys]
        texts: list[str | bytes | None] = [None] * len(names)
        unread = list(range(len(names)))
        if (turn := self._staging) is not None:
            unread = []
            for index, name in enumerate(names):
                found, texts[index] = turn.read(name)
                if not found:
                    unread.append(index)
        if unread:
            values = await self._redis.mget([names[index] for index in unread])
            for index, text in zip(unread, values, strict=True):
                texts[index] = text
        return [None if text is None else json.loads(text) for text in texts]

    @redis_boundary
    async def write_all(self, writes: Sequence[Put | Push]) -> None:
        """One ``MULTI`` (one round trip), whatever the turn staged: these writes are made
        at once, and what was read ahead for their keys is stale from now on."""
        async with self._redis.pipeline(transaction=True) as pipe:
            for write in writes:
                name = self._written(self.key(write.key))
                if isinstance(write, Push):
                    _push(pipe, name, [encode(item) for item in write.items], write.keep, write.ttl)
                else:
                    text, px = encode(write.value), milliseconds(write.ttl)
                    pipe.set(name, text, px=px, nx=write.only_new)
            await pipe.execute()

    @redis_boundary
    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await self._redis.set(self._written(self.key(key)), encode(value), px=milliseconds(ttl))

    @redis_boundary
    async def add(self, key: str, value: Any = True, *, ttl: float | None = None) -> bool:
        name = self._written(self.key(key))
        stored = await self._redis.set(name, encode(value), px=milliseconds(ttl), nx=True)
        return bool(stored)

    @redis_boundary
    async def delete(self, key: str) -> None:
        await self._redis.delete(self._written(self.key(key)))

    @redis_boundary
    async def _append(self, key: str, items: list[Any], keep: int, ttl: float | None) -> list[Any]:
        """A Redis list: push, trim, expire and read in one ``MULTI`` (one round trip); in a
        turn whose start read the list, none: the push is staged for the turn's next write
        (``agent_core.state.turn_writes``)."""
        name, encoded = self.key(key), [encode(item) for item in items]
        if (turn := self._staging) is not None:
            ttl_ms = milliseconds(ttl) or 0
            log = turn.append(name, encoded, keep=keep, ttl_ms=ttl_ms)
            if log is not None:
                return [json.loads(text) for text in log]
            turn.wrote(name)
        async with self._redis.pipeline(transaction=True) as pipe:
            _push(pipe, name, encoded, keep, ttl)
            pipe.lrange(name, 0, -1)
            replies = await pipe.execute()
        return [json.loads(text) for text in replies[-1]]


def _push(pipe: Pipeline, name: str, encoded: list[str], keep: int, ttl: float | None) -> None:
    """Queue an append of ``encoded`` to the list ``name`` on ``pipe``: push, trim, expire."""
    if not encoded:
        return
    pipe.rpush(name, *encoded)
    pipe.ltrim(name, -keep, -1)
    if ttl is None:
        pipe.persist(name)
    else:
        pipe.pexpire(name, max(1, math.ceil(ttl * 1000)))
