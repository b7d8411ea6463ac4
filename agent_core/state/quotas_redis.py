"""``RedisRateLimiter``: sliding-window quotas shared by every process."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_core.state.quotas import RateDecision, RateLimiter
from agent_core.state.redis_client import redis_boundary

if TYPE_CHECKING:
    from redis.asyncio import Redis

# A sorted set of hit times (ms, Redis's own clock, so processes' clocks never matter).
_HIT = """
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, 0, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, limit - count - 1, 0}
"""


# Add to a counter and make it end some seconds from now (after the budget period), atomically.
_SPEND = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return total
"""


class RedisRateLimiter(RateLimiter):
    """One Lua call per hit: prune, count, record, expire, atomically.

    >>> from agent_core.state.redis_client import connect_redis
    >>> limiter = RedisRateLimiter(connect_redis("redis://127.0.0.1:6379/0"))
    >>> limiter.key_prefix
    'threadline:rate:'
    """

    def __init__(self, redis: Redis, *, key_prefix: str = "threadline:rate:") -> None:
        self.key_prefix = key_prefix
        self._redis = redis
        self._hit = redis.register_script(_HIT)
        self._spend = redis.register_script(_SPEND)

    @redis_boundary
    async def hit(self, key: str, *, limit: int, window: float) -> RateDecision:
        window_ms = max(1, round(window * 1000))
        allowed, remaining, retry_ms = await self._hit(
            [self.key_prefix + key], [limit, window_ms, uuid.uuid4().hex]
        )
        return RateDecision(bool(allowed), int(remaining), int(retry_ms) / 1000)

    @redis_boundary
    async def spend(self, key: str, amount: int, *, ttl: float) -> int:
        total = await self._spend([self.key_prefix + key], [amount, math.ceil(ttl)])
        return int(total)

    @redis_boundary
    async def spent(self, keys: Sequence[str]) -> list[int]:
        if not keys:
            return []
        values = await self._redis.mget([self.key_prefix + key for key in keys])
        return [int(value or 0) for value in values]
