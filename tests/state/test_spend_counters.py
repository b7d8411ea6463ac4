"""Spend counters of the quota store (what budgets count in), on every back end: atomic
adds, a fixed end, and the count held across a restart (SQLite) and processes (Redis)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.state.quotas import MemoryRateLimiter, RateLimiter
from agent_core.state.quotas_redis import RedisRateLimiter
from agent_core.state.quotas_sqlite import SqliteRateLimiter

if TYPE_CHECKING:
    from redis.asyncio import Redis


class SpendContract:
    @pytest.fixture
    def counters(self) -> RateLimiter:
        raise NotImplementedError

    async def test_adds_up_per_key(self, counters: RateLimiter) -> None:
        assert await counters.spend("a", 5, ttl=3600) == 5
        assert await counters.spend("a", 7, ttl=3600) == 12
        assert await counters.spend("b", 1, ttl=3600) == 1
        assert await counters.spent(["a", "b", "never"]) == [12, 1, 0]
        assert await counters.spent([]) == []

    async def test_an_ended_counter_starts_again(self, counters: RateLimiter) -> None:
        assert await counters.spend("a", 5, ttl=-1) == 5
        assert await counters.spent(["a"]) == [0]
        assert await counters.spend("a", 2, ttl=60) == 2


class TestMemorySpend(SpendContract):
    @pytest.fixture
    def counters(self) -> RateLimiter:
        return MemoryRateLimiter()


class TestSqliteSpend(SpendContract):
    @pytest.fixture
    async def counters(self, tmp_path: Path) -> AsyncIterator[RateLimiter]:
        limiter = SqliteRateLimiter(tmp_path / "state.db")
        yield limiter
        await limiter.close()


class TestRedisSpend(SpendContract):
    @pytest.fixture
    def counters(self, redis: Redis, key_prefix: str) -> RateLimiter:
        return RedisRateLimiter(redis, key_prefix=key_prefix)

    async def test_an_ended_counter_starts_again(self, counters: RateLimiter) -> None:
        """Redis ends a key at whole seconds: the past one is gone at once."""
        await counters.spend("a", 5, ttl=-5)
        assert await counters.spent(["a"]) == [0]


async def test_sqlite_spend_survives_a_restart(tmp_path: Path) -> None:
    limiter = SqliteRateLimiter(tmp_path / "state.db")
    await limiter.spend("a", 40, ttl=60)
    await limiter.close()
    reopened = SqliteRateLimiter(tmp_path / "state.db")
    try:
        assert await reopened.spend("a", 2, ttl=60) == 42
    finally:
        await reopened.close()


async def test_redis_spend_adds_up_across_processes(redis_url: str, key_prefix: str) -> None:
    from agent_core.state.redis_client import connect_redis

    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        left = RedisRateLimiter(one, key_prefix=key_prefix)
        right = RedisRateLimiter(two, key_prefix=key_prefix)
        await left.spend("a", 3, ttl=60)
        assert await right.spend("a", 4, ttl=60) == 7
        assert await left.spent(["a"]) == [7]
    finally:
        await one.aclose()
        await two.aclose()
