"""``SqliteDatabase``: one SQLite file driven from one thread, so the event loop never blocks.

Every store of the embedded backend talks to its file through ``await db.run(fn)``: ``fn``
receives the connection and runs on the database's own thread (a one-worker executor), so
calls are serialised in order. A short write (``write``: a turn recorded before its ack, a
flag, a turn's progress) or read by key (``read``) skips that hop when the thread is idle:
it runs on the calling thread under the same lock, on a second connection that never waits
for another process's lock (then it queues), since a WAL commit costs tens of microseconds
and the hop to the thread and back costs more (and, on a busy machine, a wait for the GIL).
Writes that must queue (the thread is busy) share one transaction: the thread commits
everything queued since its last commit at once, each write in its own savepoint (one that
fails is undone alone), and each caller returns once that commit is done. The file is in WAL
mode (readers never wait for the writer) with ``synchronous=NORMAL``: a committed turn
survives a process crash; an OS crash may lose only the last few commits. The WAL is
checkpointed on the database thread, never inline.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Queued = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]"]
"""A write waiting for the database thread's next commit, and who waits for it."""

CHECKPOINT_EVERY = 256
"""Calls between two passive WAL checkpoints, run on the database thread (SQLite's own
automatic checkpoint is off: it would run inside whichever commit crossed its threshold,
an inline one included)."""


class SqliteDatabase:
    """An SQLite file with one connection on one thread; ``run`` and ``transaction`` are async.

    Stores declare their tables with ``ensure_schema`` (idempotent DDL, run in order before
    any later call). ``transaction`` wraps ``fn`` in ``BEGIN IMMEDIATE`` ... ``COMMIT`` so a
    multi-statement write is all or nothing; ``write`` does the same for a short ``fn`` at
    once when nothing is queued before it (same order, same durability, no thread hop).

    >>> import asyncio, tempfile, os
    >>> db = SqliteDatabase(os.path.join(tempfile.mkdtemp(), "x.db"))
    >>> db.ensure_schema("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
    >>> async def demo():
    ...     await db.transaction(lambda c: c.execute("INSERT INTO t VALUES (1)"))
    ...     await db.write(lambda c: c.execute("INSERT INTO t VALUES (2)"))
    ...     rows = await db.run(lambda c: c.execute("SELECT v FROM t").fetchall())
    ...     await db.close()
    ...     return rows
    >>> asyncio.run(demo())
    [(1,), (2,)]
    """

    def __init__(self, path: str | PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = int(busy_timeout * 1000)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadline-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._inline: sqlite3.Connection | None = None
        """``write``'s connection, opened on first use: no busy timeout."""
        self._failure: BaseException | None = None
        self._closed = False
        self._lock = threading.Lock()
        """Held by whoever uses the connection: the database thread or an inline ``write``."""
        self._submitted = 0  # written on the caller's thread only
        self._finished = 0  # written on the database thread only
        self._commits = 0
        self._queued: deque[Queued] = deque()
        """Writes waiting for the next group commit (appended here, taken on the thread)."""
        self._submit(self._guarded, self._open)

    def _submit(self, step: Callable[..., object], *args: object) -> None:
        """Queue ``step(*args)`` on the database thread, counted until it has finished."""
        self._submitted += 1
        self._executor.submit(self._counted, step, *args)

    def _counted(self, step: Callable[..., T], *args: object) -> T:
        try:
            with self._lock:
                try:
                    return step(*args)
                finally:
                    if self._checkpoint_due():
                        self._checkpoint()
        finally:
            self._finished += 1

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connect(self._busy_timeout_ms)
        connection.execute("PRAGMA journal_mode = WAL")
        self._connection = connection

    def _connect(self, busy_timeout_ms: int) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        connection.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA wal_autocheckpoint = 0")
        return connection

    def _guarded(self, step: Callable[[], None]) -> None:
        """Setup steps run unobserved; remember the first failure for the next caller."""
        if self._failure is not None:
            return
        try:
            step()
        except BaseException as error:  # re-raised by the next run()
            self._failure = error

    def ensure_schema(self, ddl: str) -> None:
        """Queue idempotent DDL (``CREATE ... IF NOT EXISTS``); it runs before later calls."""

        def create() -> None:
            self._require().executescript(ddl)

        self._submit(self._guarded, create)

    def _require(self) -> sqlite3.Connection:
        if self._failure is not None:
            raise self._failure
        if self._connection is None:
            raise RuntimeError(f"SQLite database {self.path} is closed")
        return self._connection

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return fn(self._require())

    def _call_in_transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        connection = self._require()
        connection.execute("BEGIN IMMEDIATE")
        return self._finish(connection, fn)

    def _finish(self, connection: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn`` inside the transaction just begun, then ``COMMIT`` (``ROLLBACK`` if it raised)."""
        try:
            result = fn(connection)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return result

    def _checkpoint_due(self) -> bool:
        """Count a call (under the lock); every ``CHECKPOINT_EVERY``-th one is due one."""
        self._commits += 1
        return self._commits % CHECKPOINT_EVERY == 0

    def _checkpoint(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):  # the next one tries again
                self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _idle(self) -> bool:
        """Take the lock if the database thread has nothing queued and nobody holds it."""
        return not self._closed and self._submitted == self._finished and self._lock.acquire(False)

    def _inline_connection(self) -> sqlite3.Connection:
        self._require()
        if self._inline is None:
            self._inline = self._connect(0)  # never waits here: queues instead
        return self._inline

    def _run_now(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """``fn`` in a transaction on this thread, if the database thread has nothing queued
        and no other process holds the write lock; ``(False, None)`` when it must queue."""
        if not self._idle():
            return False, None
        try:
            connection = self._inline_connection()
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return False, None  # another connection writes: the database thread waits
            result = self._finish(connection, fn)
            if self._checkpoint_due():
                self._submit(self._checkpoint)  # runs once this write has released the lock
            return True, result
        finally:
            self._lock.release()

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on the database thread (autocommit: one statement, one
        transaction)."""
        if self._closed:
            raise RuntimeError(f"SQLite database {self.path} is closed")
        self._submitted += 1
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self._counted, self._call, fn
        )

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``run(fn)`` for a short read (a few rows by key): on this thread when the
        database thread is idle (it sees every write made before it), else queued."""
        if self._idle():
            try:
                return fn(self._inline_connection())
            except sqlite3.OperationalError:
                pass  # busy (another connection recovering the WAL): the thread waits
            finally:
                self._lock.release()
        return await self.run(fn)

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` inside one ``BEGIN IMMEDIATE`` transaction."""
        return await self.run(lambda _: self._call_in_transaction(fn))

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``transaction(fn)`` for a short ``fn`` (a few rows by key): committed on this
        thread when nothing is queued before it, otherwise queued; either way durable
        (committed) when this returns."""
        return await self.write_soon(fn)

    def write_soon(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """``write(fn)`` as a future, already done when it committed at once; it settles
        once the write is committed (or failed), whether or not anyone still awaits it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        try:
            done, result = self._run_now(fn)
        except Exception as error:
            future.set_exception(error)
            return future
        if done:
            future.set_result(result)  # type: ignore[arg-type]
            return future
        if self._closed:
            raise RuntimeError(f"SQLite database {self.path} is closed")
        self._queued.append((fn, future))
        self._submit(self._commit_queued, loop)  # a later one finds the queue empty
        return future

    def _commit_queued(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the database thread: every write queued so far, in one transaction."""
        batch: list[Queued] = []
        while self._queued:
            batch.append(self._queued.popleft())
        if not batch:
            return
        try:
            connection = self._require()
            connection.execute("BEGIN IMMEDIATE")
            outcomes = self._finish(connection, lambda c: [_in_savepoint(c, fn) for fn, _ in batch])
        except Exception as error:
            outcomes = [(False, error)] * len(batch)
        for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
            loop.call_soon_threadsafe(_settle, future, ok, value)

    async def ping(self) -> None:
        """Raise if the file cannot be read (used by health checks)."""
        await self.run(lambda c: c.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        """Close the connection and stop the thread; later calls raise ``RuntimeError``."""
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            for connection in (self._inline, self._connection):
                if connection is not None:
                    connection.close()
            self._connection = self._inline = None

        self._submitted += 1
        await asyncio.get_running_loop().run_in_executor(self._executor, self._counted, shut)
        self._executor.shutdown(wait=False)


def _in_savepoint(connection: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> Any:
    """``(True, fn's result)``, or ``(False, its error)`` with its changes undone."""
    connection.execute("SAVEPOINT queued_write")
    try:
        value = fn(connection)
    except Exception as error:
        connection.execute("ROLLBACK TO queued_write")
        connection.execute("RELEASE queued_write")
        return False, error
    connection.execute("RELEASE queued_write")
    return True, value


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # its caller was cancelled: the write stands all the same
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
