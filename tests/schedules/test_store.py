"""``ScheduleStore`` on every back end: caps, listing, the claim, alert state, notices."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.errors import StateUnavailableError
from agent_core.schedules.model import LastRun
from agent_core.schedules.store import (
    ScheduleIdTaken,
    ScheduleLimitError,
    ScheduleLimits,
    ScheduleStore,
)
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.store_redis import RedisScheduleStore
from agent_core.schedules.store_sqlite import SqliteScheduleStore
from agent_core.state.redis_client import connect_redis
from agent_core.state.testing import RedisServer
from tests.schedules.builders import ORDERS_BELOW_100, schedule

if TYPE_CHECKING:
    from redis.asyncio import Redis

ROOMY = ScheduleLimits(per_person=100, per_workspace=1000)


class ScheduleStoreContract:
    @pytest.fixture
    def store(self) -> ScheduleStore:
        raise NotImplementedError

    async def test_a_schedule_comes_back_whole(self, store: ScheduleStore) -> None:
        made = schedule(alert=ORDERS_BELOW_100, notices=frozenset({"x"}), alert_state=True)
        await store.add(made, limits=ROOMY)
        assert await store.get(made.id) == made
        assert await store.get("00000000") is None

    async def test_listings_by_owner_workspace_and_all(self, store: ScheduleStore) -> None:
        first = schedule(owner="slack:T1:U1", created_at=1)
        second = schedule(owner="slack:T1:U2", created_at=2)
        elsewhere = schedule(owner="slack:T2:U1", workspace="slack:T2", created_at=3)
        for made in (second, elsewhere, first):
            await store.add(made, limits=ROOMY)
        assert [s.id for s in await store.owned_by("slack:T1:U1")] == [first.id]
        assert [s.id for s in await store.in_workspace("slack:T1")] == [first.id, second.id]
        assert [s.id for s in await store.every()] == [first.id, second.id, elsewhere.id]
        assert [s.id for s in await store.every(limit=1)] == [first.id]

    async def test_the_per_person_cap_saves_nothing_over_it(self, store: ScheduleStore) -> None:
        limits = ScheduleLimits(per_person=2, per_workspace=10)
        for _ in range(2):
            await store.add(schedule(), limits=limits)
        over = schedule()
        with pytest.raises(ScheduleLimitError) as refused:
            await store.add(over, limits=limits)
        assert refused.value.scope == "person"
        assert await store.get(over.id) is None
        await store.add(schedule(owner="slack:T1:U2"), limits=limits)  # someone else may

    async def test_an_id_is_never_stored_twice(self, store: ScheduleStore) -> None:
        limits = ScheduleLimits(per_person=10, per_workspace=10)
        made = schedule()
        await store.add(made, limits=limits)
        with pytest.raises(ScheduleIdTaken):
            await store.add(schedule(id=made.id, owner="slack:T1:U2"), limits=limits)
        assert await store.get(made.id) == made
        assert [s.id for s in await store.every()] == [made.id]

    async def test_the_per_workspace_cap(self, store: ScheduleStore) -> None:
        limits = ScheduleLimits(per_person=10, per_workspace=2)
        await store.add(schedule(owner="slack:T1:U1"), limits=limits)
        await store.add(schedule(owner="slack:T1:U2"), limits=limits)
        with pytest.raises(ScheduleLimitError) as refused:
            await store.add(schedule(owner="slack:T1:U3"), limits=limits)
        assert refused.value.scope == "workspace"
        await store.add(schedule(workspace="slack:T2"), limits=limits)

    async def test_removing_frees_a_place_under_the_cap(self, store: ScheduleStore) -> None:
        limits = ScheduleLimits(per_person=1, per_workspace=10)
        made = schedule()
        await store.add(made, limits=limits)
        assert await store.remove(made.id)
        assert not await store.remove(made.id)
        assert await store.get(made.id) is None
        assert await store.due(10**10, limit=10) == []
        await store.add(schedule(), limits=limits)

    async def test_due_is_active_and_at_or_before_now_earliest_first(
        self, store: ScheduleStore
    ) -> None:
        late, early, future = schedule(next_due=200), schedule(next_due=100), schedule(next_due=900)
        draft = schedule(next_due=50, status="draft")
        for made in (late, early, future, draft):
            await store.add(made, limits=ROOMY)
        assert [s.id for s in await store.due(200, limit=10)] == [early.id, late.id]
        assert [s.id for s in await store.due(200, limit=1)] == [early.id]
        assert await store.earliest_due() == 100

    async def test_a_lease_hides_due_schedules_from_other_readers(
        self, store: ScheduleStore
    ) -> None:
        first, second = schedule(next_due=100), schedule(next_due=110)
        for made in (first, second):
            await store.add(made, limits=ROOMY)
        assert [s.id for s in await store.due(200, limit=1, lease=30)] == [first.id]
        assert [s.id for s in await store.due(200, limit=10, lease=30)] == [second.id]
        assert await store.due(229, limit=10) == []
        assert [s.id for s in await store.due(231, limit=10)] == [first.id, second.id]
        leased = (await store.due(240, limit=10, lease=30))[0]
        assert leased.next_due == 100  # the claim still compares with the occurrence
        assert await store.advance(first.id, expected=100, next_due=250, last_run=None)
        assert [s.id for s in await store.due(250, limit=10)] == [first.id]

    async def test_the_claim_is_compare_and_set(self, store: ScheduleStore) -> None:
        made = schedule(next_due=100)
        await store.add(made, limits=ROOMY)
        ran = LastRun(at=101, outcome="dispatched")
        assert await store.advance(made.id, expected=100, next_due=200, last_run=ran)
        assert not await store.advance(made.id, expected=100, next_due=300, last_run=None)
        kept = await store.get(made.id)
        assert kept is not None and kept.next_due == 200 and kept.last_run == ran
        assert [s.id for s in await store.due(250, limit=10)] == [made.id]

    async def test_many_claims_of_one_occurrence_one_wins(self, store: ScheduleStore) -> None:
        made = schedule(next_due=100)
        await store.add(made, limits=ROOMY)
        claims = [
            store.advance(made.id, expected=100, next_due=200 + i, last_run=None) for i in range(20)
        ]
        assert sum(await asyncio.gather(*claims)) == 1

    async def test_pause_takes_it_out_of_due_and_resume_puts_it_back(
        self, store: ScheduleStore
    ) -> None:
        made = schedule(next_due=100)
        await store.add(made, limits=ROOMY)
        assert await store.note_once(made.id, "database")
        paused = await store.pause(made.id, "the channel is gone")
        assert paused is not None and paused.status == "paused"
        assert paused.paused_reason == "the channel is gone"
        assert await store.due(10**10, limit=10) == []
        assert await store.earliest_due() is None
        # a claim read before the pause does not put it back in the due list
        assert await store.advance(made.id, expected=100, next_due=150, last_run=None)
        assert await store.due(10**10, limit=10) == []
        resumed = await store.resume(made.id, 500)
        assert resumed is not None and resumed.status == "active"
        assert resumed.paused_reason is None and resumed.notices == frozenset()
        assert [s.next_due for s in await store.due(500, limit=10)] == [500]
        assert await store.pause("00000000", "x") is None
        assert await store.resume("00000000", 1) is None

    async def test_alert_state_swaps_and_returns_the_previous(self, store: ScheduleStore) -> None:
        made = schedule(alert=ORDERS_BELOW_100)
        await store.add(made, limits=ROOMY)
        swap = store.swap_alert_state
        assert await swap(made.id, True, occurrence="r1") is None
        assert await swap(made.id, True, occurrence="r2") is True
        assert await swap(made.id, False, occurrence="r3") is True
        assert await swap(made.id, True, occurrence="r4") is False
        assert await swap("00000000", True, occurrence="r5") is None
        kept = await store.get(made.id)
        assert kept is not None and kept.alert_state is True

    async def test_a_rerun_of_an_occurrence_sees_the_same_transition(
        self, store: ScheduleStore
    ) -> None:
        """A run that crashed after its swap: the re-run must still see "was false"."""
        made = schedule(alert=ORDERS_BELOW_100, alert_state=False)
        await store.add(made, limits=ROOMY)
        assert await store.swap_alert_state(made.id, True, occurrence="r1") is False
        assert await store.swap_alert_state(made.id, True, occurrence="r1") is False
        assert await store.swap_alert_state(made.id, True, occurrence="r2") is True

    async def test_a_notice_is_noted_once_until_forgotten(self, store: ScheduleStore) -> None:
        made = schedule()
        await store.add(made, limits=ROOMY)
        assert await store.note_once(made.id, "database")
        assert not await store.note_once(made.id, "database")
        assert await store.note_once(made.id, "owner")
        kept = await store.get(made.id)
        assert kept is not None and kept.notices == {"database", "owner"}
        await store.forget_notice(made.id, "database")
        assert await store.note_once(made.id, "database")
        assert not await store.note_once("00000000", "database")

    async def test_record_run_and_pause_all(self, store: ScheduleStore) -> None:
        made = schedule()
        await store.add(made, limits=ROOMY)
        await store.record_run(made.id, LastRun(at=5, outcome="posted", late_by=60))
        kept = await store.get(made.id)
        assert kept is not None and kept.last_run == LastRun(at=5, outcome="posted", late_by=60)
        await store.remove(made.id)
        await store.record_run(made.id, LastRun(at=6, outcome="posted"))
        assert await store.get(made.id) is None  # a late record does not bring it back
        await store.pause_workspace("slack:T1", True)
        await store.pause_workspace("slack:T2", True)
        await store.pause_workspace("slack:T2", False)
        assert await store.paused_workspaces() == {"slack:T1"}


class TestMemoryScheduleStore(ScheduleStoreContract):
    @pytest.fixture
    def store(self) -> ScheduleStore:
        return MemoryScheduleStore()


class TestSqliteScheduleStore(ScheduleStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[ScheduleStore]:
        store = SqliteScheduleStore(tmp_path / "state.db")
        yield store
        await store.close()


class TestRedisScheduleStore(ScheduleStoreContract):
    @pytest.fixture
    def store(self, redis: Redis, key_prefix: str) -> ScheduleStore:
        return RedisScheduleStore(redis, key_prefix=key_prefix)


async def test_sqlite_schedules_survive_a_restart(tmp_path: Path) -> None:
    store = SqliteScheduleStore(tmp_path / "state.db")
    made = schedule(next_due=100)
    await store.add(made, limits=ROOMY)
    await store.close()
    again = SqliteScheduleStore(tmp_path / "state.db")
    assert await again.get(made.id) == made
    await again.close()


async def test_redis_caps_hold_under_concurrent_adds(redis: Redis, key_prefix: str) -> None:
    """Forty people's processes adding at once never pass the cap (one script each)."""
    store = RedisScheduleStore(redis, key_prefix=key_prefix)
    limits = ScheduleLimits(per_person=5, per_workspace=1000)
    outcomes = await asyncio.gather(
        *(store.add(schedule(), limits=limits) for _ in range(40)), return_exceptions=True
    )
    assert sum(o is None for o in outcomes) == 5
    assert all(isinstance(o, ScheduleLimitError) for o in outcomes if o is not None)
    assert len(await store.owned_by("slack:T1:U1")) == 5


async def test_redis_down_is_state_unavailable(private_redis: RedisServer) -> None:
    client = connect_redis(private_redis.url, timeout=0.5)
    store = RedisScheduleStore(client)
    made = schedule()
    await store.add(made, limits=ROOMY)
    private_redis.stop(kill=True)
    with pytest.raises(StateUnavailableError):
        await store.due(10**10, limit=10)
    private_redis.start()
    assert await store.due(10**10, limit=10) == []  # it lost its data, and recovered by itself
    await client.aclose()
