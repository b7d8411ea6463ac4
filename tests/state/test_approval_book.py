"""``ApprovalBook`` on the real stores: decided exactly once across processes (real
``redis-server``), durable across restarts (SQLite, persistent Redis), and an outage fails
clearly without losing a decision."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_core.approvals import ApprovalBook, ApprovalRecord
from agent_core.approvals.book import DecisionListener
from agent_core.errors import StateUnavailableError
from agent_core.state import RedisKeyValueStore, SqliteKeyValueStore, connect_redis
from agent_core.state.testing import RedisServer, redis_available
from agent_core.state.turn_writes import TurnWrites
from agent_core.users import User

BO = User(id="bo", username="Bo")

pytestmark = pytest.mark.redis


async def test_twenty_processes_clicking_at_once_decide_once(
    redis_url: str, key_prefix: str
) -> None:
    clients = [connect_redis(redis_url) for _ in range(20)]
    books = [ApprovalBook(RedisKeyValueStore(c, key_prefix=key_prefix)) for c in clients]
    try:
        await books[0].open(ApprovalRecord.example(id="a-race"))
        decided = await asyncio.gather(
            *(
                book.decide("a-race", "approved" if i % 2 else "denied", by=BO)
                for i, book in enumerate(books)
            )
        )
        assert sum(d is not None for d in decided) == 1
        winner = next(d for d in decided if d is not None)
        assert {(await b.get("a-race")).state for b in books} == {winner.state}  # type: ignore[union-attr]
        runs = await asyncio.gather(*(book.claim_run("a-race") for book in books))
        assert runs.count(True) == 1
    finally:
        for client in clients:
            await client.aclose()


async def test_the_expiry_sweep_expires_once_across_processes(
    redis_url: str, key_prefix: str
) -> None:
    now = [1000.0]
    clients = [connect_redis(redis_url) for _ in range(3)]
    books = [
        ApprovalBook(RedisKeyValueStore(c, key_prefix=key_prefix), clock=lambda: now[0])
        for c in clients
    ]
    try:
        await books[0].open(ApprovalRecord.example(id="a-late", expires_at=1100.0))
        assert [await b.due() for b in books] == [[], [], []]
        now[0] = 1200.0
        due = await asyncio.gather(*(b.due() for b in books))
        assert {r.id for found in due for r in found} == {"a-late"}
        decided = await asyncio.gather(*(b.decide("a-late", "expired", by=None) for b in books))
        assert sum(d is not None for d in decided) == 1
        assert [await b.due() for b in books] == [[], [], []]
    finally:
        for client in clients:
            await client.aclose()


async def test_a_pending_approval_survives_a_restart_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteKeyValueStore(path, table="records")
    await ApprovalBook(store).open(ApprovalRecord.example(id="a-kept"))
    await store.close()
    reopened = SqliteKeyValueStore(path, table="records")
    try:
        record = await ApprovalBook(reopened).get("a-kept")
        assert record is not None and record.pending and record.calls[0].tool == "refund"
    finally:
        await reopened.close()


@pytest.mark.skipif(not redis_available(), reason="redis-server not installed")
async def test_an_outage_while_waiting_fails_clearly_and_loses_nothing(tmp_path: Path) -> None:
    """Redis stops while an approval waits: a click fails with ``StateUnavailableError``
    (the bot tells the clicker plainly to try again); once Redis is back (persistent), the
    approval is still pending and the click decides it."""
    server = RedisServer(tmp_path / "redis", persistent=True)
    server.start()
    client = connect_redis(server.url)
    book = ApprovalBook(RedisKeyValueStore(client))
    try:
        await book.open(ApprovalRecord.example(id="a-outage"))
        server.stop()
        with pytest.raises(StateUnavailableError):
            await book.decide("a-outage", "approved", by=BO)
        server.start()
        record = await book.get("a-outage")
        assert record is not None and record.pending
        assert await book.decide("a-outage", "approved", by=BO) is not None
    finally:
        await client.aclose()
        server.stop()


async def test_a_sweep_that_stopped_before_deciding_is_repeated_by_the_next() -> None:
    """The sweep's cursor stays at the earliest approval it found due: a process that read
    it and stopped before deciding leaves it for the next sweep, on any process."""
    from agent_core.state import MemoryKeyValueStore

    now = [1000.0]
    store = MemoryKeyValueStore()
    first, second = (ApprovalBook(store, clock=lambda: now[0]) for _ in range(2))
    await first.open(ApprovalRecord.example(id="a-left", expires_at=1010.0))
    now[0] = 5000.0
    assert [r.id for r in await first.due()] == ["a-left"]  # ... and this process stops
    now[0] = 5030.0
    assert [r.id for r in await second.due()] == ["a-left"]
    assert await second.decide("a-left", "expired", by=None) is not None
    assert await second.due() == []


async def test_each_decision_is_told_once_with_where_it_was_shown() -> None:
    from agent_core.state import MemoryKeyValueStore

    told: list[tuple[str, str, dict[str, object] | None]] = []

    async def show(record: ApprovalRecord) -> None:
        told.append((record.id, record.state, record.message))
        raise RuntimeError("Slack is down")  # logged; the decision stands

    book = ApprovalBook(MemoryKeyValueStore())
    book.listen(show)
    await book.open(ApprovalRecord.example(id="a-told"))
    await book.note_message("a-told", {"channel": "C1", "ts": "9.0"})
    assert await book.decide("a-told", "approved", by=BO) is not None
    assert await book.decide("a-told", "denied", by=BO) is None
    assert told == [("a-told", "approved", {"channel": "C1", "ts": "9.0"})]
    assert (await book.get("a-told")).state == "approved"  # type: ignore[union-attr]


async def test_every_listener_is_told_in_the_order_subscribed_even_after_one_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One agent served on two channels in one process: each channel's listener hears each
    decision (a failing one is logged; the next is still told, the decision stands)."""
    told: list[str] = []

    def listener(name: str, *, fails: bool = False) -> DecisionListener:
        async def hear(record: ApprovalRecord) -> None:
            told.append(f"{name}:{record.id}")
            if fails:
                raise RuntimeError(f"{name} is down")

        return hear

    book = ApprovalBook()
    book.listen(listener("slack", fails=True))
    book.listen(listener("teams"))
    book.listen(listener("console"))
    await book.open(ApprovalRecord.example(id="a-many"))
    assert await book.decide("a-many", "denied", by=BO) is not None
    assert told == ["slack:a-many", "teams:a-many", "console:a-many"]
    assert "slack is down" in caplog.text
    assert (await book.get("a-many")).state == "denied"  # type: ignore[union-attr]


async def test_an_unsubscribed_listener_is_told_no_more() -> None:
    told: list[str] = []

    async def first(record: ApprovalRecord) -> None:
        told.append(f"first:{record.id}")

    async def second(record: ApprovalRecord) -> None:
        told.append(f"second:{record.id}")

    book = ApprovalBook()
    unsubscribe = book.listen(first)
    book.listen(second)
    for approval_id in ("a-before", "a-after"):
        await book.open(ApprovalRecord.example(id=approval_id))
    await book.decide("a-before", "approved", by=BO)
    unsubscribe()
    unsubscribe()  # a second call does nothing
    await book.decide("a-after", "approved", by=BO)
    assert told == ["first:a-before", "second:a-before", "second:a-after"]


async def test_a_turns_view_of_the_book_shares_its_listeners(
    redis_url: str, key_prefix: str
) -> None:
    """A turn decides through its view (``for_turn``: a newer message cancels a pending
    approval); a channel that subscribed after the view was made still hears it, and one
    subscribed through the view hears the book's decisions."""
    client = connect_redis(redis_url)
    book = ApprovalBook(RedisKeyValueStore(client, key_prefix=key_prefix))
    view = book.for_turn(TurnWrites(client))
    told: list[str] = []

    async def channel(record: ApprovalRecord) -> None:
        told.append(f"channel:{record.id}")

    async def console(record: ApprovalRecord) -> None:
        told.append(f"console:{record.id}")

    try:
        assert view is not book
        book.listen(channel)
        view.listen(console)
        for approval_id in ("a-view", "a-book"):
            await book.open(ApprovalRecord.example(id=approval_id))
        assert await view.decide("a-view", "cancelled", by=BO) is not None
        assert await book.decide("a-book", "approved", by=BO) is not None
        assert told == ["channel:a-view", "console:a-view", "channel:a-book", "console:a-book"]
    finally:
        await client.aclose()


async def test_each_channel_sweeps_its_own_approvals_on_one_shared_store(
    redis_url: str, key_prefix: str
) -> None:
    """Slack's and Teams' bots share one Redis: each sweep expires (and so resumes) only the
    approvals asked in its own channel, and never moves the other's cursor."""
    now = [1000.0]
    client = connect_redis(redis_url)
    book = ApprovalBook(RedisKeyValueStore(client, key_prefix=key_prefix), clock=lambda: now[0])
    try:
        for platform in ("slack", "teams"):
            record = ApprovalRecord.example(
                id=f"a-{platform}", expires_at=1100.0, request={"platform": platform}
            )
            await book.open(record)
        now[0] = 1200.0
        assert [r.id for r in await book.due(platform="slack")] == ["a-slack"]
        await book.decide("a-slack", "expired", by=None)
        assert await book.due(platform="slack") == []
        now[0] = 5000.0  # the Teams bot sweeps much later: its approval is still found
        assert [r.id for r in await book.due(platform="teams")] == ["a-teams"]
        assert await book.due() == []  # nothing was asked without a channel
    finally:
        await client.aclose()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
async def test_pending_for_lists_what_one_may_decide_in_one_workspace_on_every_store(
    kind: str, tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    """A home's list (issue 40): per workspace and channel, pending and unexpired, only what
    the person may decide, newest first; a decided one leaves it. The same on each store."""
    from agent_core.approvals import HeldCall
    from agent_core.state import MemoryKeyValueStore

    client = connect_redis(redis_url) if kind == "redis" else None
    store: Any = {
        "memory": lambda: MemoryKeyValueStore(),
        "sqlite": lambda: SqliteKeyValueStore(tmp_path / "state.db", table="records"),
        "redis": lambda: RedisKeyValueStore(client, key_prefix=key_prefix),
    }[kind]()
    now = [1000.0]
    book = ApprovalBook(store, clock=lambda: now[0])
    admins = [HeldCall(id="c", tool="refund", arguments={}, approvers=["admin"])]
    here = {"platform": "slack", "workspace_id": "T1"}
    try:
        for approval_id, changes in (
            ("a-old", {"request": here, "calls": admins, "created_at": 1.0}),
            ("a-new", {"request": here, "calls": admins, "created_at": 2.0}),
            ("a-asker", {"request": here}),  # only its asker (Ana) may decide it
            ("a-other", {"request": {**here, "workspace_id": "T2"}, "calls": admins}),
            ("a-teams", {"request": {**here, "platform": "teams"}, "calls": admins}),
            ("a-late", {"request": here, "calls": admins, "expires_at": 1100.0}),
        ):
            await book.open(
                ApprovalRecord.example(id=approval_id, **{"expires_at": 5000.0, **changes})
            )
        admin = User(id="alex", group_memberships=["admin"])
        now[0] = 1200.0
        found = await book.pending_for(admin, platform="slack", workspace="T1")
        assert [r.id for r in found] == ["a-new", "a-old"]
        ana = User(id="ana")
        assert [r.id for r in await book.pending_for(ana, platform="slack", workspace="T1")] == [
            "a-asker"
        ]
        await book.decide("a-new", "approved", by=admin)
        found = await book.pending_for(admin, platform="slack", workspace="T1", limit=5)
        assert [r.id for r in found] == ["a-old"]
        assert await book.pending_for(BO, platform="slack", workspace="T1") == []
    finally:
        if isinstance(store, SqliteKeyValueStore):
            await store.close()
        if client is not None:
            await client.aclose()
