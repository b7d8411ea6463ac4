"""``SqliteTurnQueue``: durable turns for the single-process default.

A turn accepted before a crash or restart is still in the file; the next start claims it
at once (it can only belong to a process that is gone), so it is re-run (``attempt`` > 1,
with its recorded progress) or handed to ``give_up``. One process per file. Turn ids come
from ``TurnIds`` (no ``AUTOINCREMENT`` page in each enqueue's commit); the tables and the
rows an enqueue writes are in ``turn_rows_sqlite``.

**Handed over where it was recorded.** While a worker of this process has a free slot
(``attach``), the enqueue's own transaction records the turn as fetched by that worker, and
begun when it is first in its thread (``attempts`` 1), and the worker runs it at once: no
fetch, no ``begin``, no transaction after the ack. Only while no older turn waits for a
fetch, so turns still start in the order they came. A crash in between loses nothing: the
turn belongs to a worker that is gone, and the next start claims it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING, Any

from agent_core.clock import SYSTEM_CLOCK
from agent_core.state.expiry_sqlite import ExpiryPurge
from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag, encode
from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
from agent_core.state.sqlite import SqliteDatabase
from agent_core.state.turn_backend import Delivery, Intake, Intakes, Readiness, Start
from agent_core.state.turn_ids_sqlite import TurnIds
from agent_core.state.turn_rows_sqlite import COLUMNS, SCHEMA, SEEN, Recorded, deliveries, insert
from agent_core.state.turns import TurnQueue

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


class SqliteTurnQueue(TurnQueue):
    """Turns in an SQLite table; per-thread order by row id; dedupe keys in the same file
    and the same transaction as the turn.

    >>> import asyncio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "turns.db")
    >>> async def demo():
    ...     queue = SqliteTurnQueue(path)
    ...     await queue.enqueue("t1", {"text": "hi"}, dedupe_key="Ev1")
    ...     await queue.close()
    ...     reopened = SqliteTurnQueue(path)
    ...     count = await reopened.pending()
    ...     await reopened.close()
    ...     return count
    >>> asyncio.run(demo())
    1
    """

    hands_over = True

    def __init__(
        self,
        database: SqliteDatabase | str | PathLike[str],
        *,
        claim_after: float = 30.0,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        super().__init__(claim_after=claim_after)
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(SCHEMA)
        self._ids = TurnIds(self._db)
        self._clock = clock
        self._arrived = asyncio.Event()
        self._intakes = Intakes()
        self._live: set[str] = set()
        self._purge = ExpiryPurge("turn_seen")

    def attach(self, intake: Intake) -> contextlib.AbstractContextManager[object]:
        """Hand turns recorded in this process to ``intake`` while the block runs (its
        turns belong to a live worker from now on: ``claim`` leaves them to it)."""
        self._live.add(intake.consumer)
        return self._intakes.attached(intake)

    async def enqueue(
        self,
        thread_key: str,
        payload: dict[str, Any],
        *,
        dedupe_key: str | None = None,
        dedupe_ttl: float = 3600.0,
        owner: str | None = None,
        flag: Flag | None = None,
    ) -> str | None:
        now = self._clock()
        first = None if flag is None or flag.first_payload is None else flag.first_payload
        texts = (encode(payload), "" if first is None else encode(first))
        together = self._flag_store(flag)
        if flag is not None and together is None:  # another database: added just before
            await flag.add()
        # ids commit in the order taken: nothing is awaited from here to the write
        turn_id = self._ids.take() or await self._ids.next()
        intake = self._intakes.reserve(owner)
        holder = None if intake is None else (intake.consumer, now + self.claim_after)

        def write(connection: sqlite3.Connection) -> Recorded | None:
            if dedupe_key is not None:  # new, or seen long enough ago to count as new
                seen = connection.execute(SEEN, (dedupe_key, now + dedupe_ttl, now))
                if seen.rowcount == 0:
                    return None
            text = texts[0]
            if flag is not None and together is not None:
                flag.added = together.add_in(connection, flag.key, flag.value, ttl=flag.ttl)
            if flag is not None and flag.added and first is not None:
                text = texts[1]
            self._purge.after_write(connection, now)
            handed = insert(connection, (turn_id, thread_key, text, now, owner), holder)
            return Recorded(str(turn_id), thread_key, text, now, handed)

        written = self._db.write_soon(write)
        if not written.done():  # queued: committed later
            await self._committed(written, intake, owner)
        if (recorded := self._hand_over(written, intake, owner)) is not None:
            return recorded.id
        if flag is not None and together is not None:
            flag.added = False
        written.result()  # raises the write's error
        return None  # a duplicate

    async def _committed(
        self, written: asyncio.Future[Recorded | None], intake: Intake | None, owner: str | None
    ) -> None:
        """Until the queued write is committed; if this is cancelled meanwhile, the turn is
        still handed over (or its slot given back) once it is."""
        try:
            await asyncio.shield(written)
        except asyncio.CancelledError:
            written.add_done_callback(lambda _: self._hand_over(written, intake, owner))
            raise
        except Exception:
            return  # raised by the caller, after _hand_over gave the slot back

    def _hand_over(
        self,
        written: asyncio.Future[Recorded | None],
        intake: Intake | None,
        owner: str | None,
    ) -> Recorded | None:
        """After the enqueue's commit: the turn to the worker it was handed to (the slot back
        when it was not), else a waiting fetch woken. None: a duplicate, or the write failed."""
        failed = written.cancelled() or written.exception() is not None
        recorded = None if failed else written.result()
        if intake is not None and (recorded is None or recorded.handed == "no"):
            intake.unreserve(owner)
        if recorded is None:
            return None
        if intake is None or recorded.handed == "no":
            self._arrived.set()
        else:
            start = Start(Readiness.RUN, 1) if recorded.handed == "runs" else None
            intake.take(recorded.delivery(owner), start)
        return recorded

    def _flag_store(self, flag: Flag | None) -> SqliteKeyValueStore | None:
        """The flag's store when it lives in this queue's database (one transaction)."""
        store = None if flag is None else flag.store
        return store if isinstance(store, SqliteKeyValueStore) and store.shares(self._db) else None

    async def _take_new(self, consumer: str, count: int) -> list[Delivery]:
        sql = (
            "UPDATE turns SET fetched = 1, owner = ?, lease_until = ? WHERE id IN"
            f" (SELECT id FROM turns WHERE fetched = 0 ORDER BY id LIMIT ?) RETURNING {COLUMNS}"
        )
        params = (consumer, self._clock() + self.claim_after, count)
        return deliveries(await self._db.write(lambda c: c.execute(sql, params).fetchall()))

    async def fetch(self, consumer: str, count: int, timeout: float) -> list[Delivery]:
        self._live.add(consumer)
        self._arrived.clear()
        taken = await self._take_new(consumer, count)
        if taken:
            return taken
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            return []
        return await self._take_new(consumer, count)

    async def claim(self, consumer: str, count: int) -> list[Delivery]:
        self._live.add(consumer)
        now = self._clock()
        # A turn owned by no live worker of this process belongs to a process that is gone
        # (one process per file): take it at once instead of waiting for its lease.
        live = ",".join("?" * len(self._live))
        sql = (
            "UPDATE turns SET owner = ?, lease_until = ? WHERE id IN (SELECT id FROM turns"
            f" WHERE fetched = 1 AND owner != ? AND (lease_until < ? OR owner NOT IN ({live}))"
            f" ORDER BY id LIMIT ?) RETURNING {COLUMNS}"
        )
        params = (consumer, now + self.claim_after, consumer, now, *self._live, count)
        rows = await self._db.write(lambda c: c.execute(sql, params).fetchall())
        return deliveries(rows)

    async def begin(self, delivery: Delivery, consumer: str) -> Start:
        def decide(connection: sqlite3.Connection) -> Start:
            row = connection.execute(
                "SELECT owner, attempts, progress FROM turns WHERE id = ?", (int(delivery.id),)
            ).fetchone()
            if row is None or row[0] != consumer:
                return Start(Readiness.GONE)
            (head,) = connection.execute(
                "SELECT min(id) FROM turns WHERE thread = ?", (delivery.thread_key,)
            ).fetchone()
            if head != int(delivery.id):
                return Start(Readiness.WAIT)
            connection.execute(
                "UPDATE turns SET attempts = attempts + 1 WHERE id = ?", (int(delivery.id),)
            )
            return Start(Readiness.RUN, row[1] + 1, json.loads(row[2]))

        return await self._db.write(decide)

    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        sql = "UPDATE turns SET lease_until = ? WHERE id = ? AND owner = ?"
        args = (self._clock() + self.claim_after, int(delivery.id), consumer)
        return bool(await self._db.write(lambda c: c.execute(sql, args).rowcount))

    async def save_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        encode(progress)

        def merge(connection: sqlite3.Connection) -> None:
            row = connection.execute(
                "SELECT progress FROM turns WHERE id = ?", (int(delivery.id),)
            ).fetchone()
            if row is not None:
                merged = encode({**json.loads(row[0]), **progress})
                connection.execute(
                    "UPDATE turns SET progress = ? WHERE id = ?", (merged, int(delivery.id))
                )

        await self._db.write(merge)

    async def complete(
        self, delivery: Delivery, consumer: str, writes: TurnWrites | None = None
    ) -> bool:
        sql = "DELETE FROM turns WHERE id = ? AND owner = ?"
        args = (int(delivery.id), consumer)
        return bool(await self._db.write(lambda c: c.execute(sql, args).rowcount))

    async def pending(self) -> int:
        row = await self._db.read(lambda c: c.execute("SELECT count(*) FROM turns").fetchone())
        return int(row[0])

    async def health(self) -> StateHealth:
        try:
            await self._db.ping()
        except Exception as error:
            return StateHealth(
                ok=False, backend="sqlite", detail=f"{type(error).__name__}: {error}"
            )
        return StateHealth(ok=True, backend="sqlite")

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
