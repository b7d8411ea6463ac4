"""The LLM's queries over a scope's file tables (``agent_core.database.file_tables``):
``ScopeRunner``, a ``SqlRunner`` on a read-only open of the scope's DuckDB database with file
access turned off and locked (no ``read_csv('/etc/passwd')``, ``COPY``, ``ATTACH`` or
extension installs), after the same one-read-statement check as the database's. A query is
interrupted at its timeout and on Stop, and the scope's lock is held until its thread
returns. The configured database, when joined, is attached read-only as ``db`` before the
lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.engine import URL, make_url

from agent_core.database.file_formats import duckdb_module
from agent_core.database.results import read_result
from agent_core.database.statements import check_statement
from agent_core.masking import hide_paths
from agent_core.tools.sql import SqlError, SqlResult, SqlRunner

logger = logging.getLogger(__name__)

NO_FILES = "no files were shared with you in this conversation"


@dataclass(frozen=True)
class Attached:
    """The configured database, joined read-only as ``db`` (``kind``: DuckDB's ``TYPE``)."""

    path: Path
    kind: Literal["duckdb", "sqlite"] = "duckdb"


def joinable(url: str | URL | None) -> Attached | None:
    """A database URL as DuckDB can join it: a DuckDB file (natively) or a SQLite file
    (when DuckDB's ``sqlite`` extension is installed); None otherwise.

    >>> joinable("postgresql://u@h/db") is None
    True
    """
    if url is None:
        return None
    parsed = make_url(url)
    backend, database = parsed.get_backend_name(), parsed.database
    if not database or database == ":memory:":
        return None
    if backend == "duckdb":
        return Attached(Path(database), "duckdb")
    if backend == "sqlite" and sqlite_extension():
        return Attached(Path(database), "sqlite")
    return None


def sqlite_extension() -> bool:
    """Whether DuckDB can open SQLite files here (its ``sqlite`` extension is installed)."""
    duckdb = duckdb_module()
    try:
        with duckdb.connect(config={"autoinstall_known_extensions": False}) as probe:
            probe.execute("LOAD sqlite")
    except duckdb.Error:
        logger.info(
            "shared files are not joined with the SQLite database: DuckDB's sqlite "
            "extension is not installed (INSTALL sqlite)"
        )
        return False
    return True


def run_query(runner: ScopeRunner, sql: str, max_rows: int, handle: Interrupt) -> SqlResult:
    """Run the LLM's ``sql`` on a read-only, locked open of the scope's database."""
    path, attach = runner.path, runner.attach
    if not path.exists():
        raise SqlError(NO_FILES, reason="unavailable")
    check_statement(sql, "duckdb")
    duckdb = duckdb_module()
    config = {**runner.config, "enable_external_access": attach is not None}
    with duckdb.connect(str(path), read_only=True, config=config) as connection:
        if attach is not None:
            _attach(connection, attach)
        handle.attach(connection)
        started = time.perf_counter()
        try:
            connection.execute(sql)
            result = read_result(
                connection, max_rows=max_rows, count_limit=1_000_000, deadline=handle.deadline
            )
        except duckdb.Error as error:
            raise _translate(error, handle) from None
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result


def _attach(connection: Any, attach: Attached) -> None:
    """Join the configured database read-only as ``db``, then lock file access."""
    try:
        kind = "" if attach.kind == "duckdb" else f"TYPE {attach.kind}, "
        if attach.kind != "duckdb":
            connection.execute(f"LOAD {attach.kind}")  # installed (checked), never downloaded
        path = str(attach.path).replace("'", "''")
        connection.execute(f"ATTACH '{path}' AS db ({kind}READ_ONLY)")
    except duckdb_module().Error as error:  # e.g. DuckDB's sqlite extension is not installed
        logger.warning(
            "files: could not join the database %s: %s", attach.path, str(error).splitlines()[0]
        )
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")


def _translate(error: Exception, handle: Interrupt) -> SqlError:
    duckdb = duckdb_module()
    first = hide_paths(str(error).splitlines()[0])[:300]  # never the server's file paths
    if isinstance(error, duckdb.InterruptException) or handle.reason is not None:
        reason = handle.reason or "timeout"
        return SqlError(f"the query was stopped ({reason})", reason="timeout")
    if isinstance(error, duckdb.PermissionException):
        return SqlError(f"refused: {first}", reason="read_only")
    if isinstance(error, duckdb.InvalidInputException) and "read-only" in first:
        return SqlError(f"refused: {first}", reason="read_only")
    return SqlError(first, reason="invalid")


class Interrupt:
    """The one running query of a ``ScopeRunner`` call, interrupted at its deadline or on
    Stop from the event loop."""

    def __init__(self, timeout: float) -> None:
        self.deadline = time.perf_counter() + timeout
        self.reason: str | None = None
        self._connection: Any = None

    def attach(self, connection: Any) -> None:
        self._connection = connection
        if self.reason is not None:
            connection.interrupt()

    def interrupt(self, reason: str) -> None:
        self.reason = reason
        if self._connection is not None:
            with contextlib.suppress(Exception):  # already closed: nothing to interrupt
                self._connection.interrupt()


class ScopeRunner(SqlRunner):
    """One scope's tables as a ``SqlRunner`` (DuckDB SQL, read-only); ``lock`` is the
    scope's (one load or query at a time), ``config`` DuckDB's for the open."""

    dialect = "DuckDB"

    def __init__(
        self, path: Path, lock: asyncio.Lock, *, config: dict[str, Any], attach: Attached | None
    ) -> None:
        self.path = path
        self.lock = lock
        self.config = config
        self.attach = attach

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        handle = Interrupt(timeout)
        async with self.lock:
            job = asyncio.ensure_future(asyncio.to_thread(run_query, self, sql, max_rows, handle))
            try:
                done, _ = await asyncio.wait({job}, timeout=timeout)
                if not done:
                    await _interrupt_until_done(job, handle, "timeout")
                return await job
            except asyncio.CancelledError:  # Stop: the query ends before the lock is freed
                await _interrupt_until_done(job, handle, "stop")
                raise


async def _interrupt_until_done(job: asyncio.Future[Any], handle: Interrupt, reason: str) -> None:
    """Interrupt the query until its thread returns (an interrupt that lands between two
    statements of the thread is lost, so it is repeated: a bounded poll of the thread)."""
    while not job.done():
        handle.interrupt(reason)
        await asyncio.wait({job}, timeout=0.05)
    with contextlib.suppress(Exception):
        job.exception()  # retrieved: the caller raises its own error
