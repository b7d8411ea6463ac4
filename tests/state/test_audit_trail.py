"""The hash-chained audit trail on every back end: appends make one chain (also when
several writers race), ``verify`` passes on an untouched trail and names the first bad
record after one is edited, removed or inserted directly in the store, and ``erase`` drops a
person's details and directory entry while the chain still verifies."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agent_core.audit_chain import AuditEntry
from agent_core.state.audit import AuditStore, MemoryAuditStore
from agent_core.state.audit_redis import RedisAuditStore
from agent_core.state.audit_sqlite import SqliteAuditStore
from agent_core.state.redis_client import connect_redis
from agent_core.state.sqlite import SqliteDatabase

if TYPE_CHECKING:
    from redis.asyncio import Redis


def entry(n: int, person: str = "p:alice") -> AuditEntry:
    return AuditEntry(
        at=1000.0 + n,
        kind="tool_invocation",
        person=person,
        workspace="slack:T1",
        details={"tool": "run_sql", "sql": f"select {n}"},
    )


async def fill(store: AuditStore, count: int = 5) -> None:
    for n in range(1, count + 1):
        await store.append(entry(n), identity={"id": "slack:T1:U1", "name": "Alice"})


class AuditStoreContract:
    @pytest.fixture
    def store(self) -> AuditStore:
        raise NotImplementedError

    async def test_appends_make_one_chain_that_verifies(self, store: AuditStore) -> None:
        assert (await store.verify()).ok  # the empty trail
        await fill(store)
        records = await store.records()
        assert [r.seq for r in records] == [1, 2, 3, 4, 5]
        assert [r.prev for r in records[1:]] == [r.hash for r in records[:-1]]
        assert await store.head() == records[-1].hash
        verdict = await store.verify()
        assert verdict.ok and verdict.checked == 5, verdict

    async def test_records_between_two_instants(self, store: AuditStore) -> None:
        await fill(store)
        found = await store.records(since=1002.0, until=1004.0)
        assert [r.seq for r in found] == [2, 3]

    async def test_erase_keeps_the_chain_and_drops_details_and_the_directory_entry(
        self, store: AuditStore
    ) -> None:
        await fill(store, 3)
        await store.append(entry(4, person="p:bob"), identity={"id": "slack:T1:U2"})
        assert set(await store.people()) == {"p:alice", "p:bob"}
        assert await store.erase("p:alice", dry_run=True) == 3
        assert set(await store.people()) == {"p:alice", "p:bob"}  # a dry run keeps all
        assert await store.erase("p:alice") == 3
        assert set(await store.people()) == {"p:bob"}
        records = await store.records()
        assert [r.details is None for r in records] == [True, True, True, False]
        verdict = await store.verify()
        assert verdict.ok and verdict.erased == 3, verdict

    async def test_the_pseudonym_key_is_made_once(self, store: AuditStore) -> None:
        first = (await store.pseudonyms()).of("slack:T1:U1")
        store._pseudonyms = None  # as a second process would start: read the kept key
        assert (await store.pseudonyms()).of("slack:T1:U1") == first


class TestMemory(AuditStoreContract):
    @pytest.fixture
    def store(self) -> AuditStore:
        return MemoryAuditStore()


class TestSqlite(AuditStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[AuditStore]:
        store = SqliteAuditStore(tmp_path / "state.db")
        yield store
        await store.close()

    async def test_two_writers_on_one_file_keep_one_chain(self, tmp_path: Path) -> None:
        """Two connections (as two processes would have) appending at once."""
        first = SqliteAuditStore(SqliteDatabase(tmp_path / "state.db"))
        await first.append(entry(0))  # the file exists (in WAL mode) before the second opens
        stores = [first, SqliteAuditStore(SqliteDatabase(tmp_path / "state.db"))]
        await asyncio.gather(*(s.append(entry(n)) for n in range(20) for s in stores))
        verdict = await stores[0].verify()
        assert verdict.ok and verdict.checked == 41, verdict
        for s in stores:
            await s._db.close()

    @staticmethod
    def _sql(path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
        with sqlite3.connect(path) as connection:
            for sql, params in statements:
                connection.execute(sql, params)

    async def test_an_edited_record_is_named(self, tmp_path: Path, store: AuditStore) -> None:
        await fill(store)
        self._sql(tmp_path / "state.db", ("UPDATE audit_trail SET kind = 'x' WHERE seq = 3", ()))
        assert (await store.verify()).first_bad == 3

    async def test_edited_details_are_named(self, tmp_path: Path, store: AuditStore) -> None:
        await fill(store)
        forged = json.dumps({"tool": "run_sql", "sql": "select 0"})
        self._sql(
            tmp_path / "state.db", ("UPDATE audit_trail SET details = ? WHERE seq = 2", (forged,))
        )
        verdict = await store.verify()
        assert (verdict.ok, verdict.first_bad) == (False, 2)
        assert "details" in verdict.reason

    async def test_a_removed_record_is_named(self, tmp_path: Path, store: AuditStore) -> None:
        await fill(store)
        self._sql(tmp_path / "state.db", ("DELETE FROM audit_trail WHERE seq = 3", ()))
        assert (await store.verify()).first_bad == 4

    async def test_a_removed_newest_record_is_caught(
        self, tmp_path: Path, store: AuditStore
    ) -> None:
        await fill(store)
        self._sql(tmp_path / "state.db", ("DELETE FROM audit_trail WHERE seq = 5", ()))
        verdict = await store.verify()
        assert (verdict.ok, verdict.first_bad) == (False, 4)

    async def test_an_inserted_record_is_named(self, tmp_path: Path, store: AuditStore) -> None:
        await fill(store)
        records = await store.records()
        row = records[2]  # a copy of record 3, slipped in after record 2
        self._sql(
            tmp_path / "state.db",
            ("UPDATE audit_trail SET seq = seq + 100 WHERE seq >= 3", ()),
            ("UPDATE audit_trail SET seq = seq - 99 WHERE seq >= 100", ()),
            (
                "INSERT INTO audit_trail VALUES (3, ?, 'approval_decided', ?, ?, NULL, NULL, "
                "'{}', ?, ?, ?)",
                (row.at, row.person, row.workspace, row.details_hash, row.prev, row.hash),
            ),
        )
        assert [r.seq for r in await store.records()] == [1, 2, 3, 4, 5, 6]
        assert (await store.verify()).first_bad == 3


class TestRedis(AuditStoreContract):
    @pytest.fixture
    def store(self, redis: Redis, key_prefix: str) -> AuditStore:
        return RedisAuditStore(redis, key_prefix=key_prefix)

    async def test_two_processes_racing_keep_one_chain(
        self, redis_url: str, key_prefix: str
    ) -> None:
        """Each writer has its own connection and its own idea of the head."""
        clients = [connect_redis(redis_url) for _ in range(2)]
        stores = [RedisAuditStore(c, key_prefix=key_prefix) for c in clients]
        await asyncio.gather(*(s.append(entry(n)) for n in range(25) for s in stores))
        verdict = await stores[0].verify()
        assert verdict.ok and verdict.checked == 50, verdict
        for client in clients:
            await client.aclose()

    @staticmethod
    async def _rewrite(redis: Redis, store: RedisAuditStore, change: str, seq: int) -> None:
        """Rebuild the stream as someone with access to Redis could: ``change`` record
        ``seq`` (edit), leave it out (remove) or put a copy of it before it (insert)."""
        stream = store.key("trail")
        entries = await redis.xrange(stream)
        await redis.delete(stream)
        for _, fields in entries:
            sealed = json.loads(fields["r"])
            if sealed["seq"] == seq:
                if change == "remove":
                    continue
                if change == "edit":
                    sealed["workspace"] = "slack:T2"
                if change == "insert":
                    forged = dict(sealed, kind="approval_decided")
                    await redis.xadd(stream, {"r": json.dumps(forged)})
            await redis.xadd(stream, {"r": json.dumps(sealed)})

    @pytest.mark.parametrize(("change", "bad"), [("edit", 3), ("remove", 4), ("insert", 3)])
    async def test_a_changed_trail_is_named(
        self, redis: Redis, store: AuditStore, change: str, bad: int
    ) -> None:
        await fill(store)
        assert isinstance(store, RedisAuditStore)
        await self._rewrite(redis, store, change, 3)
        verdict = await store.verify()
        assert (verdict.ok, verdict.first_bad) == (False, bad), verdict

    async def test_edited_details_are_named(self, redis: Redis, store: AuditStore) -> None:
        await fill(store)
        assert isinstance(store, RedisAuditStore)
        await redis.hset(store.key("details"), "2", json.dumps({"sql": "select 0"}))
        assert (await store.verify()).first_bad == 2


WRITER = """
import asyncio, sys
from agent_core.audit_chain import AuditEntry
from agent_core.state_factory import StateSettings, build_state

async def main() -> None:
    url, prefix, folder, name = sys.argv[1:5]
    settings = StateSettings(redis_url=url, key_prefix=prefix) if url else StateSettings(
        data_dir=folder
    )
    state = build_state(settings)
    for n in range(60):
        entry = AuditEntry(at=float(n), kind="question", person=f"p:{name}")
        if n % 2:
            state.audit.submit(entry)  # written behind, in batches
            await asyncio.sleep(0)
        else:
            await state.audit.append(entry)
    await state.aclose()

asyncio.run(main())
"""


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_two_real_processes_keep_one_chain(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two OS processes write to one trail at once: one chain, every record, verified."""
    import subprocess
    import sys

    url = prefix = ""
    if backend == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("key_prefix")
    root = Path(__file__).resolve().parents[2]

    def write(name: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", WRITER, url, prefix, str(tmp_path), name]
        env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    from agent_core.state_factory import StateSettings, build_state

    settings = (
        StateSettings(redis_url=url, key_prefix=prefix) if url else StateSettings(data_dir=tmp_path)
    )
    made = build_state(settings)  # the files exist (in WAL mode) before both processes open
    await made.audit.append(AuditEntry(at=0.0, kind="started"))
    await made.aclose()
    done = await asyncio.gather(*(asyncio.to_thread(write, name) for name in ("a", "b")))
    assert [d.returncode for d in done] == [0, 0], [d.stderr[-2000:] for d in done]
    state = build_state(settings)
    verdict = await state.audit.verify()
    people = sorted({r.person or "" for r in await state.audit.records()})
    await state.aclose()
    assert verdict.ok and verdict.checked == 121, verdict
    assert people == ["", "p:a", "p:b"]


async def test_records_queued_while_redis_is_down_are_written_when_it_is_back(
    private_redis: Any, key_prefix: str
) -> None:
    """The turn never waits on the trail: what it queued during an outage is written, in
    order and chained, by the next write once Redis is back; a close during the outage
    tells how many are lost instead of failing the shutdown. (This Redis keeps nothing
    across a restart, so the trail starts again after it: the writer seals after the head
    Redis has, not the one it remembered.)"""
    client = connect_redis(private_redis.url)
    store = RedisAuditStore(client, key_prefix=key_prefix)
    await store.append(entry(1))
    private_redis.stop()
    store.submit(entry(2))
    store.submit(entry(3))
    await asyncio.sleep(0.3)  # the writer tried and failed: nothing is lost yet
    private_redis.start()
    await store.append(entry(4))
    verdict = await store.verify()
    assert verdict.ok and verdict.checked == 3, verdict
    assert [r.at for r in await store.records()] == [1002.0, 1003.0, 1004.0]
    private_redis.stop()
    store.submit(entry(5))
    await store.close()  # logged, not raised
    await client.aclose()
