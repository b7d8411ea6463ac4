"""``RedisKeyValueStore``: the key/value store shared by every process through Redis."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from agent_core.state.keyvalue import KeyValueStore, encode
from agent_core.state.redis_client import redis_boundary

if TYPE_CHECKING:
    from redis.asyncio import Redis


def milliseconds(ttl: float | None) -> int | None:
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


class RedisKeyValueStore(KeyValueStore):
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

    @redis_boundary
    async def get(self, key: str) -> Any | None:
        text = await self._redis.get(self.key(key))
        return None if text is None else json.loads(text)

    @redis_boundary
    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await self._redis.set(self.key(key), encode(value), px=milliseconds(ttl))

    @redis_boundary
    async def add(self, key: str, value: Any = True, *, ttl: float | None = None) -> bool:
        stored = await self._redis.set(self.key(key), encode(value), px=milliseconds(ttl), nx=True)
        return bool(stored)

    @redis_boundary
    async def delete(self, key: str) -> None:
        await self._redis.delete(self.key(key))

    @redis_boundary
    async def _append(self, key: str, items: list[Any], keep: int, ttl: float | None) -> list[Any]:
        """A Redis list: push, trim, expire and read in one ``MULTI`` (one round trip)."""
        name = self.key(key)
        async with self._redis.pipeline(transaction=True) as pipe:
            if items:
                pipe.rpush(name, *(encode(item) for item in items))
                pipe.ltrim(name, -keep, -1)
                if ttl is None:
                    pipe.persist(name)
                else:
                    pipe.pexpire(name, max(1, math.ceil(ttl * 1000)))
            pipe.lrange(name, 0, -1)
            replies = await pipe.execute()
        return [json.loads(text) for text in replies[-1]]
