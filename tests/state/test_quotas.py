"""Sliding-window quotas on every back end, and ``RateLimitHook`` through ``send_message``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    MemoryConversationStore,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.components.feedback import StatusCardComponent
from agent_core.schedules.testing import ManualClock
from agent_core.state.quotas import MemoryRateLimiter, RateLimiter, RateLimitHook
from agent_core.state.quotas_redis import RedisRateLimiter
from agent_core.state.quotas_sqlite import SqliteRateLimiter

if TYPE_CHECKING:
    from redis.asyncio import Redis


class RateLimiterContract:
    @pytest.fixture
    def limiter(self) -> RateLimiter:
        raise NotImplementedError

    async def test_allows_up_to_the_limit_then_refuses(self, limiter: RateLimiter) -> None:
        decisions = [await limiter.hit("u1", limit=3, window=3600) for _ in range(5)]
        assert [d.allowed for d in decisions] == [True, True, True, False, False]
        assert [d.remaining for d in decisions] == [2, 1, 0, 0, 0]
        assert all(0 < d.retry_after <= 3600 for d in decisions[3:])
        assert all(d.retry_after == 0 for d in decisions[:3])

    async def test_keys_are_independent(self, limiter: RateLimiter) -> None:
        assert (await limiter.hit("u1", limit=1, window=3600)).allowed
        assert not (await limiter.hit("u1", limit=1, window=3600)).allowed
        assert (await limiter.hit("u2", limit=1, window=3600)).allowed


class ClockedRateLimiterContract(RateLimiterContract):
    """Limiters that read an injected clock (memory, SQLite): time is the test's."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock(1_000_000.0)

    async def test_the_window_slides(self, limiter: RateLimiter, clock: ManualClock) -> None:
        """A hit leaves the count once it is ``window`` old; refusals never count.

        Regression: it ran on a 0.2 s window of the real clock and failed under load (two
        hits more than 0.2 s apart); a pinned clock makes it exact."""
        assert (await limiter.hit("u1", limit=1, window=60)).allowed
        clock.advance(1)
        refused = await limiter.hit("u1", limit=1, window=60)
        assert not refused.allowed and refused.retry_after == 59
        clock.advance(58.5)
        refused = await limiter.hit("u1", limit=1, window=60)
        assert not refused.allowed and refused.retry_after == 0.5
        clock.advance(0.5)  # the first hit is 60 s old; the refusals were never counted
        assert (await limiter.hit("u1", limit=1, window=60)).allowed


class TestMemoryRateLimiter(ClockedRateLimiterContract):
    @pytest.fixture
    def limiter(self, clock: ManualClock) -> RateLimiter:
        return MemoryRateLimiter(clock=clock.now)


class TestSqliteRateLimiter(ClockedRateLimiterContract):
    @pytest.fixture
    async def limiter(self, tmp_path: Path, clock: ManualClock) -> AsyncIterator[RateLimiter]:
        limiter = SqliteRateLimiter(tmp_path / "state.db", clock=clock.now)
        yield limiter
        await limiter.close()


class TestRedisRateLimiter(RateLimiterContract):
    @pytest.fixture
    def limiter(self, redis: Redis, key_prefix: str) -> RateLimiter:
        return RedisRateLimiter(redis, key_prefix=key_prefix)

    async def test_the_window_slides(self, limiter: RateLimiter) -> None:
        """A hit leaves the count once it is ``window`` old (Redis's own clock: a refusal
        asked over an hour, then the same hit counted over 50 ms until it has left).

        Regression: a 0.2 s window for the refusal too failed under load (two hits more
        than 0.2 s apart)."""
        assert (await limiter.hit("u1", limit=1, window=3600)).allowed
        refused = await limiter.hit("u1", limit=1, window=3600)
        assert not refused.allowed and 0 < refused.retry_after <= 3600
        deadline = time.monotonic() + 5
        while not (await limiter.hit("u1", limit=1, window=0.05)).allowed:
            assert time.monotonic() < deadline, "the window never slid"
            await asyncio.sleep(0.01)  # Redis's clock passing, polled with a deadline


async def test_sqlite_quota_survives_a_restart(tmp_path: Path) -> None:
    limiter = SqliteRateLimiter(tmp_path / "state.db")
    assert (await limiter.hit("u1", limit=1, window=3600)).allowed
    await limiter.close()
    reopened = SqliteRateLimiter(tmp_path / "state.db")
    try:
        assert not (await reopened.hit("u1", limit=1, window=3600)).allowed
    finally:
        await reopened.close()


async def test_redis_quota_holds_across_processes(redis_url: str, key_prefix: str) -> None:
    from agent_core.state.redis_client import connect_redis

    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        left = RedisRateLimiter(one, key_prefix=key_prefix)
        right = RedisRateLimiter(two, key_prefix=key_prefix)
        assert (await left.hit("u1", limit=2, window=3600)).allowed
        assert (await right.hit("u1", limit=2, window=3600)).allowed
        assert not (await left.hit("u1", limit=2, window=3600)).allowed
    finally:
        await one.aclose()
        await two.aclose()


def _agent(hook: RateLimitHook, user: User, store: MemoryConversationStore) -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(["one", "two", "three"]),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(user),
        agent_memory=InMemoryAgentMemory(),
        conversation_store=store,
        lifecycle_hooks=[hook],
    )


async def test_rate_limit_hook_refuses_with_when_to_retry() -> None:
    now = [1000.0]
    hook = RateLimitHook(MemoryRateLimiter(clock=lambda: now[0]), limit=2, window=3600)
    user, store = User(id="slack:T1:U1", group_memberships=["user"]), MemoryConversationStore()
    agent = _agent(hook, user, store)
    for question in ("first", "second"):
        [_ async for _ in agent.send_message(RequestContext(), question, conversation_id="c1")]
    now[0] += 600
    components = [
        c async for c in agent.send_message(RequestContext(), "third", conversation_id="c1")
    ]
    [card] = [
        c.rich_component for c in components if isinstance(c.rich_component, StatusCardComponent)
    ]
    assert card.status == "error"
    assert card.description is not None
    assert card.description.startswith(
        "You have reached your limit of 2 messages per hour. You can ask again in 50 minutes"
    )
    stored = await store.get_conversation("c1", user)
    assert stored is not None
    assert [m.content for m in stored.messages if m.role == "user"] == ["first", "second"]


async def test_exempt_groups_are_not_counted() -> None:
    hook = RateLimitHook(MemoryRateLimiter(), limit=1, window=60, exempt_groups=["admin"])
    admin = User(id="a", group_memberships=["admin"])
    for _ in range(3):
        assert await hook.before_message(admin, "hi") is None


def test_invalid_quota() -> None:
    with pytest.raises(ValueError):
        RateLimitHook(MemoryRateLimiter(), limit=0, window=60)
