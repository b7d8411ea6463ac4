"""``SqliteDatabase``: one SQLite file driven from one thread, so the event loop never blocks.

Every store of the embedded backend talks to its file through ``await db.run(fn)``: ``fn``
receives the connection and runs on the database's own thread (a one-worker executor), so
calls are serialised without locks and the connection never crosses threads. The file is in
WAL mode (readers never wait for the writer) with ``synchronous=NORMAL``: a committed turn
survives a process crash; an OS crash may lose only the last few commits.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class SqliteDatabase:
    """An SQLite file with one connection on one thread; ``run`` and ``transaction`` are async.

    Stores declare their tables with ``ensure_schema`` (idempotent DDL, run in order before
    any later call). ``transaction`` wraps ``fn`` in ``BEGIN IMMEDIATE`` ... ``COMMIT`` so a
    multi-statement write is all or nothing.

    >>> import asyncio, tempfile, os
    >>> db = SqliteDatabase(os.path.join(tempfile.mkdtemp(), "x.db"))
    >>> db.ensure_schema("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
    >>> async def demo():
    ...     await db.transaction(lambda c: c.execute("INSERT INTO t VALUES (1)"))
    ...     rows = await db.run(lambda c: c.execute("SELECT v FROM t").fetchall())
    ...     await db.close()
    ...     return rows
    >>> asyncio.run(demo())
    [(1,)]
    """

    def __init__(self, path: str | PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = int(busy_timeout * 1000)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadline-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._failure: BaseException | None = None
        self._closed = False
        self._executor.submit(self._guarded, self._open)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        connection.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        self._connection = connection

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

        self._executor.submit(self._guarded, create)

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
        try:
            result = fn(connection)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return result

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on the database thread (autocommit: one statement, one
        transaction)."""
        if self._closed:
            raise RuntimeError(f"SQLite database {self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, fn)

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` inside one ``BEGIN IMMEDIATE`` transaction."""
        return await self.run(lambda _: self._call_in_transaction(fn))

    async def ping(self) -> None:
        """Raise if the file cannot be read (used by health checks)."""
        await self.run(lambda c: c.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        """Close the connection and stop the thread; later calls raise ``RuntimeError``."""
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

        await asyncio.get_running_loop().run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=False)
