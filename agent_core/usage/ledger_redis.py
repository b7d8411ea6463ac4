"""``RedisUsageLedger``: LLM usage shared by every process through Redis.

Per UTC day and dimension one hash, ``{prefix}usage:{day}:{dimension}``, whose fields are
``{key}\\x1f{counter}`` (``input``, ``cache_read``, ``cache_write``, ``output``, ``cost``,
``unpriced``, ``calls``); per turn one hash ``{prefix}usage:turn:{id}`` (kept a week).
A call is one ``MULTI`` of ``HINCRBY``s and ``EXPIRE``s, so every process's calls add up.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from agent_core.state.redis_client import redis_boundary
from agent_core.usage.ledger import (
    DIMENSIONS,
    TURN_DAYS,
    Dimension,
    Totals,
    UsageLedger,
    UsageRecord,
    UsageSummary,
    days,
    summarise,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

SEPARATOR = "\x1f"


def _counters(record: UsageRecord) -> dict[str, int]:
    totals = Totals()
    totals.add(record.tokens, record.cost_nano)
    return {name: value for name, value in totals.counters().items() if value}


class RedisUsageLedger(UsageLedger):
    """See the module docstring.

    >>> from agent_core.state.redis_client import connect_redis
    >>> RedisUsageLedger(connect_redis("redis://127.0.0.1:6379/0")).key_prefix
    'threadline:usage:'
    """

    def __init__(
        self, redis: Redis, *, key_prefix: str = "threadline:usage:", retention_days: int = 400
    ) -> None:
        super().__init__()
        self._redis = redis
        self.key_prefix = key_prefix
        self.retention_days = retention_days

    def _day_key(self, day: dt.date, dimension: Dimension) -> str:
        return f"{self.key_prefix}{day.isoformat()}:{dimension}"

    @redis_boundary
    async def _store(self, record: UsageRecord) -> None:
        counters = _counters(record)
        keep = int(dt.timedelta(days=self.retention_days).total_seconds())
        async with self._redis.pipeline(transaction=True) as pipe:
            for dimension, key in record.keys().items():
                hash_key = self._day_key(record.day, dimension)
                for name, value in counters.items():
                    pipe.hincrby(hash_key, f"{key}{SEPARATOR}{name}", value)
                pipe.expire(hash_key, keep)
            turn_key = f"{self.key_prefix}turn:{record.turn_id}"
            for name, value in counters.items():
                pipe.hincrby(turn_key, name, value)
            pipe.expire(turn_key, TURN_DAYS * 86400)
            await pipe.execute()

    @redis_boundary
    async def summary(self, first: dt.date, last: dt.date) -> UsageSummary:
        wanted = [(day, dimension) for day in days(first, last) for dimension in DIMENSIONS]
        async with self._redis.pipeline(transaction=False) as pipe:
            for day, dimension in wanted:
                pipe.hgetall(self._day_key(day, dimension))
            found = await pipe.execute()
        rows: list[tuple[Dimension, str, Totals]] = []
        for (_, dimension), fields in zip(wanted, found, strict=True):
            rows += [(dimension, key, totals) for key, totals in _by_key(fields).items()]
        return summarise(first, last, rows)

    @redis_boundary
    async def prune_before(self, first_kept: dt.date) -> int:
        """Day keys expire by themselves after ``retention_days``; this removes those
        before a shorter setting."""
        match = f"{self.key_prefix}????-??-??:*"
        start, cut = len(self.key_prefix), first_kept.isoformat()
        old = [
            key
            async for key in self._redis.scan_iter(match=match, count=1000)
            if key[start : start + 10] < cut
        ]
        for at in range(0, len(old), 500):
            await self._redis.unlink(*old[at : at + 500])
        return len(old)

    @redis_boundary
    async def pseudonymise(self, person: str, pseudonym: str, *, dry_run: bool = False) -> int:
        match = f"{self.key_prefix}????-??-??:person"
        days = [name async for name in self._redis.scan_iter(match=match, count=1000)]
        theirs = f"{person}{SEPARATOR}"
        if dry_run:
            held = 0
            for day in days:
                fields = await self._redis.hkeys(day)
                held += any(str(name).startswith(theirs) for name in fields)
            return held
        if not days:
            return 0
        move = self._redis.register_script(_MOVE)
        moved = await move(keys=days, args=[theirs, f"{pseudonym}{SEPARATOR}"])
        return int(moved)

    @redis_boundary
    async def turn(self, turn_id: str) -> Totals:
        fields = await self._redis.hgetall(f"{self.key_prefix}turn:{turn_id}")
        return Totals.of({_text(name): int(value) for name, value in fields.items()})


_MOVE = """
local moved = 0
for _, key in ipairs(KEYS) do
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local name = fields[i]
    if string.sub(name, 1, #ARGV[1]) == ARGV[1] then
      local counter = string.sub(name, #ARGV[1] + 1)
      redis.call('HINCRBY', key, ARGV[2] .. counter, fields[i + 1])
      redis.call('HDEL', key, name)
      moved = moved + 1
    end
  end
end
return moved
"""
"""Each ``person`` field of the day hashes in KEYS moved to the pseudonym, atomically."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _by_key(fields: dict[bytes | str, bytes | str]) -> dict[str, Totals]:
    grouped: dict[str, dict[str, int]] = {}
    for field, value in fields.items():
        key, _, name = _text(field).rpartition(SEPARATOR)
        grouped.setdefault(key, {})[name] = int(value)
    return {key: Totals.of(counters) for key, counters in grouped.items()}
