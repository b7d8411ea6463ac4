"""``RedisRateLimiter``: sliding-window quotas shared by every process.

In the view of a turn a Redis turn worker runs (``for_turn``), a ``hit`` takes the hit the
turn's start made for it, when there is one: the asker's previous turn taught its quota
hit (``hit_template``) with the keys it read, and the script that started this turn made
it (``agent_core.state.turn_writes``); one the turn does not take is taken back as it
completes (``unconsumed_hits``). The quota then costs a turn no round trip of its own.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from agent_core.state.quotas import RateDecision, RateLimiter
from agent_core.state.redis_client import redis_boundary
from agent_core.state.turn_writes import TurnBound, Value

if TYPE_CHECKING:
    from redis.asyncio import Redis

# A sorted set of hit times (ms, Redis's own clock, so processes' clocks never matter),
# one member per hit; a hit whose member is already counted is not counted again.
HIT_LUA = """
local function quota_hit(key, limit, window, member)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  if redis.call('ZSCORE', key, member) then return {1, limit - count, 0} end
  if count >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return {0, 0, tonumber(oldest[2]) + window - now}
  end
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1, 0}
end
"""
"""Lua: ``quota_hit`` counts one hit (``member``) of ``key`` when it fits:
``{allowed, remaining, retry after ms}``."""

_HIT = HIT_LUA + "return quota_hit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3])"

HIT_MARK = "\x01"
"""Begins a read that is a quota hit (``hit_template``), not a key."""


def hit_template(key: str, limit: int, window_ms: int) -> str:
    """The read a turn teaches its asker's next turn for a hit of the quota ``key``: that
    turn's start makes the hit (``turns_redis_scripts.STARTED``).

    >>> hit_template("threadline:rate:quota:U1", 20, 3600000).split(HIT_MARK)
    ['', '20', '3600000', 'threadline:rate:quota:U1']
    """
    return f"{HIT_MARK}{limit}{HIT_MARK}{window_ms}{HIT_MARK}{key}"


def unconsumed_hits(read_ahead: Mapping[str, Value]) -> list[str]:
    """The hits a turn's start made that the turn did not take, as key, member pairs (flat):
    its completion takes them back.

    >>> unconsumed_hits({"\x0120\x01600\x01k": "1 19 0 p#1", "\x011\x01600\x01j": "0 0 5 p#1"})
    ['k', 'p#1']
    """
    found: list[str] = []
    for template, value in read_ahead.items():
        if template.startswith(HIT_MARK) and isinstance(value, str):
            allowed, _, _, member = value.split(" ", 3)
            if allowed == "1":
                found += [template.split(HIT_MARK, 3)[3], member]
    return found


# Add to a counter and make it end some seconds from now (after the budget period), atomically.
_SPEND = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return total
"""


class RedisRateLimiter(TurnBound, RateLimiter):
    """One Lua call per hit: prune, count, record, expire, atomically (none in a turn whose
    start made it; see the module docstring).

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
        name, window_ms = self.key_prefix + key, max(1, round(window * 1000))
        if (turn := self._staging) is not None:
            found, made = turn.read(hit_template(name, limit, window_ms))
            if found and made is not None:
                allowed, remaining, retry_ms, _ = made.split(" ", 3)
                return RateDecision(allowed == "1", int(remaining), int(retry_ms) / 1000)
        allowed, remaining, retry_ms = await self._hit([name], [limit, window_ms, uuid.uuid4().hex])
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
