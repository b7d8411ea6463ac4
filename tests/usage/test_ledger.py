"""The usage ledger on every back end: per day and dimension, per turn, unknown prices,
and what it keeps across a restart (SQLite) and processes (Redis)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.usage.counts import TokenCounts
from agent_core.usage.ledger import MemoryUsageLedger, UsageLedger, UsageRecord
from agent_core.usage.ledger_redis import RedisUsageLedger
from agent_core.usage.ledger_sqlite import SqliteUsageLedger

if TYPE_CHECKING:
    from redis.asyncio import Redis

DAY = dt.date(2026, 11, 26)


def call(
    person: str = "slack:T1:U1",
    *,
    day: dt.date = DAY,
    turn: str = "t1",
    profile: str | None = "finance",
    model: str = "claude-sonnet-5-5",
    tokens: int = 100,
    cost: int | None = 1000,
) -> UsageRecord:
    return UsageRecord(
        at=dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC),
        turn_id=turn,
        person=person,
        profile=profile,
        workspace="slack:T1",
        model=model,
        tokens=TokenCounts(input=tokens, cache_read=tokens * 2, cache_write=3, output=tokens // 2),
        cost_nano=cost,
    )


class LedgerContract:
    @pytest.fixture
    def ledger(self) -> UsageLedger:
        raise NotImplementedError

    async def test_totals_and_top_spenders(self, ledger: UsageLedger) -> None:
        await ledger.record(call("ana", tokens=100, cost=1000))
        await ledger.record(call("ana", tokens=100, cost=1000, turn="t2"))
        await ledger.record(call("bo", tokens=500, cost=9000, profile=None, turn="t3"))
        summary = await ledger.summary(DAY, DAY)
        assert summary.total.calls == 3
        assert summary.total.cost_nano == 11_000 and summary.total.cost_known
        assert summary.total.tokens.output == 350
        assert [r.key for r in summary.top("person")] == ["bo", "ana"]
        assert [r.key for r in summary.top("profile")] == ["(default)", "finance"]
        assert summary.by["workspace"]["slack:T1"].calls == 3

    async def test_unknown_prices_keep_their_tokens(self, ledger: UsageLedger) -> None:
        await ledger.record(call(model="claude-made-up", cost=None, tokens=10))
        await ledger.record(call(cost=500, tokens=10))
        total = (await ledger.summary(DAY, DAY)).total
        assert total.cost_nano == 500 and not total.cost_known
        assert (
            total.unpriced_tokens
            == TokenCounts(input=10, cache_read=20, cache_write=3, output=5).total
        )

    async def test_days_outside_the_span_are_left_out(self, ledger: UsageLedger) -> None:
        await ledger.record(call(day=DAY - dt.timedelta(days=7)))
        await ledger.record(call(day=DAY - dt.timedelta(days=6)))
        week = await ledger.summary(DAY - dt.timedelta(days=6), DAY)
        assert week.total.calls == 1
        assert (await ledger.summary(DAY, DAY)).total.calls == 0

    async def test_each_turn_adds_up(self, ledger: UsageLedger) -> None:
        await ledger.record(call(turn="t9", tokens=10))
        await ledger.record(call(turn="t9", tokens=20))
        turn = await ledger.turn("t9")
        assert turn.calls == 2 and turn.tokens.input == 30
        assert (await ledger.turn("unknown")).calls == 0

    async def test_this_process_counts_by_model(self, ledger: UsageLedger) -> None:
        await ledger.record(call(tokens=10))
        assert ledger.recorded["claude-sonnet-5-5"].tokens.input == 10


class TestMemoryLedger(LedgerContract):
    @pytest.fixture
    def ledger(self) -> UsageLedger:
        return MemoryUsageLedger()


class TestSqliteLedger(LedgerContract):
    @pytest.fixture
    async def ledger(self, tmp_path: Path) -> AsyncIterator[UsageLedger]:
        ledger = SqliteUsageLedger(tmp_path / "state.db")
        yield ledger
        await ledger.close()


class TestRedisLedger(LedgerContract):
    @pytest.fixture
    def ledger(self, redis: Redis, key_prefix: str) -> UsageLedger:
        return RedisUsageLedger(redis, key_prefix=key_prefix)


async def test_sqlite_usage_survives_a_restart(tmp_path: Path) -> None:
    ledger = SqliteUsageLedger(tmp_path / "state.db")
    await ledger.record(call())
    await ledger.close()
    reopened = SqliteUsageLedger(tmp_path / "state.db")
    try:
        assert (await reopened.summary(DAY, DAY)).total.calls == 1
    finally:
        await reopened.close()


async def test_redis_usage_adds_up_across_processes(redis_url: str, key_prefix: str) -> None:
    from agent_core.state.redis_client import connect_redis

    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        await RedisUsageLedger(one, key_prefix=key_prefix).record(call("ana"))
        await RedisUsageLedger(two, key_prefix=key_prefix).record(call("ana", turn="t2"))
        summary = await RedisUsageLedger(one, key_prefix=key_prefix).summary(DAY, DAY)
        assert summary.by["person"]["ana"].calls == 2
    finally:
        await one.aclose()
        await two.aclose()
