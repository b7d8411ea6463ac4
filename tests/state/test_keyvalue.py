"""``KeyValueStore`` (identity caches, installations, references) and ``DedupeStore`` on
every back end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.state.dedupe import DedupeStore
from agent_core.state.keyvalue import KeyValueStore, MemoryKeyValueStore, Push, Put
from agent_core.state.keyvalue_redis import RedisKeyValueStore
from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
from agent_core.state.redis_client import connect_redis

if TYPE_CHECKING:
    from redis.asyncio import Redis

REFERENCE = {
    "activityId": "1:abc",
    "bot": {"id": "28:bot", "name": "Threadline"},
    "conversation": {"id": "a:1x", "tenantId": "tenant-1", "conversationType": "personal"},
    "serviceUrl": "https://smba.trafficmanager.net/emea/",
    "user": {"id": "29:user", "aadObjectId": "aad-1"},
}


class KeyValueContract:
    @pytest.fixture
    def store(self) -> KeyValueStore:
        raise NotImplementedError

    async def test_set_get_delete(self, store: KeyValueStore) -> None:
        assert await store.get("teams:ref:tenant-1:aad-1") is None
        await store.set("teams:ref:tenant-1:aad-1", REFERENCE)
        assert await store.get("teams:ref:tenant-1:aad-1") == REFERENCE
        await store.set("teams:ref:tenant-1:aad-1", {"replaced": True})
        assert await store.get("teams:ref:tenant-1:aad-1") == {"replaced": True}
        await store.delete("teams:ref:tenant-1:aad-1")
        await store.delete("teams:ref:tenant-1:aad-1")
        assert await store.get("teams:ref:tenant-1:aad-1") is None

    async def test_values_are_json_and_come_back_as_copies(self, store: KeyValueStore) -> None:
        groups = {"members": ["U1", "U2"], "count": 2, "admin": False, "ratio": 0.5}
        await store.set("slack:identity:groups:T1", groups, ttl=60)
        loaded = await store.get("slack:identity:groups:T1")
        assert loaded == groups
        loaded["members"].append("U3")
        assert await store.get("slack:identity:groups:T1") == groups
        with pytest.raises(TypeError):
            await store.set("bad", object())

    async def test_add_stores_only_when_absent(self, store: KeyValueStore) -> None:
        assert await store.add("slack:event:Ev1", ttl=60) is True
        assert await store.add("slack:event:Ev1", ttl=60) is False
        assert await store.get("slack:event:Ev1") is True
        assert await store.add("k", value={"first": 1}) is True
        assert await store.add("k", value={"second": 2}) is False
        assert await store.get("k") == {"first": 1}

    async def test_entries_expire(self, store: KeyValueStore) -> None:
        await store.set("short", "v", ttl=0.05)
        await store.set("long", "v", ttl=3600)
        await store.set("forever", "v")
        deadline = time.monotonic() + 5
        while await store.get("short") is not None:  # a real clock: poll, bounded
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert await store.get("long") == "v" and await store.get("forever") == "v"
        assert await store.add("short", ttl=60) is True

    async def test_concurrent_adds_admit_exactly_one(self, store: KeyValueStore) -> None:
        """A retry storm: many deliveries of one event at once, exactly one goes through."""
        results = await asyncio.gather(*(store.add("slack:event:Ev9", ttl=60) for _ in range(20)))
        assert results.count(True) == 1

    async def test_a_log_keeps_its_newest_items_in_order(self, store: KeyValueStore) -> None:
        assert await store.append("slack:messages:t", [], keep=3) == []
        assert await store.append("slack:messages:t", [{"ts": "1"}], keep=3, ttl=60) == [
            {"ts": "1"}
        ]
        log = await store.append("slack:messages:t", [{"ts": "2"}, {"ts": "3"}, 4], keep=3, ttl=60)
        assert log == [{"ts": "2"}, {"ts": "3"}, 4]
        assert await store.append("slack:messages:t", [], keep=3) == log
        await store.delete("slack:messages:t")
        assert await store.append("slack:messages:t", [], keep=3) == []

    async def test_a_log_expires_and_bad_items_change_nothing(self, store: KeyValueStore) -> None:
        await store.append("log", ["kept"], keep=5, ttl=60)
        with pytest.raises(TypeError):
            await store.append("log", ["fine", object()], keep=5, ttl=60)
        with pytest.raises(ValueError, match="at least one"):
            await store.append("log", ["x"], keep=0)
        assert await store.append("log", [], keep=5) == ["kept"]
        await store.append("short", ["x"], keep=5, ttl=0.05)
        deadline = time.monotonic() + 5
        while await store.append("short", [], keep=5):  # a real clock: poll, bounded
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)

    async def test_concurrent_appends_lose_nothing(self, store: KeyValueStore) -> None:
        """Messages of one thread recorded by many deliveries at once: none is lost."""
        await asyncio.gather(*(store.append("log", [n], keep=100, ttl=60) for n in range(20)))
        assert sorted(await store.append("log", [], keep=100)) == list(range(20))

    async def test_many_keys_are_read_in_order(self, store: KeyValueStore) -> None:
        await store.set("a", {"n": 1})
        await store.set("gone", 1, ttl=0.01)
        await asyncio.sleep(0.05)  # "gone" expires (a real clock)
        assert await store.get_many(["missing", "a", "gone", "a"]) == [
            None,
            {"n": 1},
            None,
            {"n": 1},
        ]
        assert await store.get_many([]) == []

    async def test_writes_made_together_are_what_each_write_makes(
        self, store: KeyValueStore
    ) -> None:
        """``write_all``: sets, adds (only when absent) and appends (newest kept), in order."""
        await store.set("taken", "first")
        await store.append("log", [1, 2], keep=3)
        await store.write_all(
            [
                Put("record", {"id": "a1"}, ttl=60),
                Put("taken", "second", only_new=True),
                Put("new", 7, only_new=True, ttl=60),
                Push("log", [3, 4], keep=3, ttl=60),
                Push("other", [], keep=3),
                Put("record", {"id": "a2"}),
            ]
        )
        assert await store.get_many(["record", "taken", "new"]) == [{"id": "a2"}, "first", 7]
        assert await store.append("log", [], keep=3) == [2, 3, 4]
        assert await store.append("other", [], keep=3) == []
        with pytest.raises(ValueError, match="at least one"):
            Push("log", ["x"], keep=0)


class TestMemoryKeyValueStore(KeyValueContract):
    @pytest.fixture
    def store(self) -> KeyValueStore:
        return MemoryKeyValueStore()


class TestSqliteKeyValueStore(KeyValueContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[KeyValueStore]:
        store = SqliteKeyValueStore(tmp_path / "state.db", table="records")
        yield store
        await store.close()


class TestRedisKeyValueStore(KeyValueContract):
    @pytest.fixture
    def store(self, redis: Redis, key_prefix: str) -> KeyValueStore:
        return RedisKeyValueStore(redis, key_prefix=key_prefix)


def test_memory_store_evicts_the_oldest() -> None:
    store = MemoryKeyValueStore(max_entries=2)
    for key in "abc":
        asyncio.run(store.set(key, key))
    assert len(store) == 2 and asyncio.run(store.get("a")) is None


def test_sqlite_rejects_unsafe_table_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SqliteKeyValueStore(tmp_path / "x.db", table="kv; DROP TABLE turns")


async def test_sqlite_tables_in_one_file_are_separate(tmp_path: Path) -> None:
    from agent_core.state.sqlite import SqliteDatabase

    db = SqliteDatabase(tmp_path / "state.db")
    cache, records = (
        SqliteKeyValueStore(db, table="cache"),
        SqliteKeyValueStore(db, table="records"),
    )
    try:
        await cache.set("k", "cached", ttl=60)
        await records.set("k", "durable")
        assert (await cache.get("k"), await records.get("k")) == ("cached", "durable")
    finally:
        await db.close()


async def test_dedupe_across_processes(redis_url: str, key_prefix: str) -> None:
    """Slack retries spread over two processes: exactly one sees the event first."""
    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        left = DedupeStore(RedisKeyValueStore(one, key_prefix=key_prefix))
        right = DedupeStore(RedisKeyValueStore(two, key_prefix=key_prefix))
        firsts = await asyncio.gather(
            *(store.first_time("slack:T1:Ev1", 300) for store in [left, right] * 10)
        )
        assert firsts.count(True) == 1
        await left.forget("slack:T1:Ev1")
        assert await right.first_time("slack:T1:Ev1") is True
    finally:
        await one.aclose()
        await two.aclose()


async def test_sqlite_dedupe_survives_a_restart(tmp_path: Path) -> None:
    store = SqliteKeyValueStore(tmp_path / "state.db", table="dedupe")
    assert await DedupeStore(store).first_time("teams:activity:1") is True
    await store.close()
    reopened = SqliteKeyValueStore(tmp_path / "state.db", table="dedupe")
    try:
        assert await DedupeStore(reopened).first_time("teams:activity:1") is False
    finally:
        await reopened.close()
