"""``SqlAlchemyRunner``: the one ``SqlRunner`` for every database SQLAlchemy speaks.

Each query: the statement check (one read statement, ``agent_core.database.statements``);
a pooled connection (``agent_core.database.pools``: one pool per URL per process); the
dialect's read-only transaction and server-side timeout (``agent_core.database.dialects``);
the first rows kept and the rest counted (``agent_core.database.results``); and always a
rollback. It runs on a bounded thread pool, never on the event loop. At the deadline, or
when the awaiting task is cancelled (the user's Stop), the query is cancelled on the server
(``agent_core.database.cancel``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from agent_core.database.cancel import CancelReason, QueryHandle
from agent_core.database.failures import role_error, translate
from agent_core.database.functions import FunctionPolicy
from agent_core.database.identity import DataIdentity
from agent_core.database.limits import HARD_STOP_GRACE, EngineLimits
from agent_core.database.pools import DEFAULT_WORKERS, PoolOptions, pool_for
from agent_core.database.results import read_result
from agent_core.database.sqlite_guard import SqliteGuard
from agent_core.database.statements import check_statement
from agent_core.database.urls import mask_url, parse_url
from agent_core.tools.sql import SqlError, SqlResult, SqlRunner

logger = logging.getLogger(__name__)

T = TypeVar("T")


class SqlAlchemyRunner(SqlRunner):
    """Runs one read query at a time on any SQLAlchemy URL; read-only unless ``allow_writes``.

    After the first ``max_rows`` rows the rest are counted, not kept, up to ``count_limit``
    more; queries stop at ``timeout`` and when the awaiting task is cancelled. ``functions``
    adds the operator's own functions to the dialect's allow list; ``allow_privileged``
    keeps a PostgreSQL superuser (a sandbox only); ``limits`` bound embedded engines.

    >>> import asyncio, os, sqlite3, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> db = sqlite3.connect(path)
    >>> _ = db.executescript("CREATE TABLE t(n); INSERT INTO t VALUES (1), (2);")
    >>> db.close()
    >>> runner = SqlAlchemyRunner(f"sqlite:///{path}")
    >>> asyncio.run(runner.run_sql("SELECT n FROM t", max_rows=1)).row_note()
    'showing 1 of 2 rows'
    """

    def __init__(
        self,
        url: str | URL,
        *,
        allow_writes: bool = False,
        count_limit: int = 1_000_000,
        workers: int = DEFAULT_WORKERS,
        functions: Iterable[str] = (),
        allow_privileged: bool = False,
        limits: EngineLimits | None = None,
    ) -> None:
        self.url = parse_url(url)
        self.allow_writes = allow_writes
        self.count_limit = count_limit
        options = PoolOptions(
            writable=allow_writes,
            allow_privileged=allow_privileged,
            limits=limits or EngineLimits(),
        )
        self.pool = pool_for(self.url, options, workers=workers)
        self.rules = self.pool.rules
        self.dialect = self.rules.label
        self.parser_dialect = self.rules.sqlglot
        self.functions = FunctionPolicy.for_dialect(self.rules.sqlglot, functions)
        self.identity: DataIdentity | None = None
        """Whose queries ``run_sql`` runs (``as_identity``); Threadline's own queries
        (``run_trusted``, introspection) always run as the URL's user."""
        self._dbapi_errors: tuple[type[BaseException], ...] = (
            SQLAlchemyError,
            _dbapi_error(self.pool.engine.dialect),
        )

    @classmethod
    def sqlite(cls, path: str | Path, **options: Any) -> SqlAlchemyRunner:
        """A runner on a SQLite file (never created: a missing file is ``unavailable``)."""
        return cls(URL.create("sqlite", database=str(path)), **options)

    def as_identity(self, identity: DataIdentity) -> SqlAlchemyRunner:
        """This runner (the same pool) running the model's queries as ``identity``: in
        PostgreSQL its role and settings are set in each query's transaction
        (``set_config(..., true)``), and end with it."""
        bound = copy.copy(self)
        bound.identity = identity
        return bound

    @property
    def identity_label(self) -> str | None:
        return self.identity.label if self.identity is not None else None

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    @property
    def backend(self) -> str:
        return self.rules.backend

    # -- the SqlRunner contract ------------------------------------------------------------

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        return await self._submit(
            lambda handle: self._query(sql, max_rows, timeout, handle, check=True), timeout
        )

    async def describe(self) -> str:
        if self.backend == "sqlite":
            result = await self.run_trusted(
                "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND sql IS NOT "
                "NULL AND name NOT LIKE 'sqlite_%' ORDER BY name",
                max_rows=10_000,
            )
            return ";\n\n".join(str(row[0]) for row in result.rows) + ";"
        from agent_core.database.introspection import introspect

        catalog = await self.with_connection(introspect, timeout=120.0)
        return catalog.render()

    # -- for the framework's own queries -----------------------------------------------------

    async def run_trusted(
        self, sql: str, *, max_rows: int = 1000, timeout: float = 30.0
    ) -> SqlResult:
        """Run Threadline's own query (introspection, checks) without the statement check,
        still in the read-only transaction."""
        return await self._submit(
            lambda handle: self._query(sql, max_rows, timeout, handle, check=False), timeout
        )

    async def with_connection(self, work: Callable[[Connection], T], *, timeout: float) -> T:
        """Call ``work(connection)`` on a worker thread, inside the read-only transaction
        (introspection uses it)."""

        def job(handle: QueryHandle) -> T:
            return self._with_connection(work, timeout, handle)

        return await self._submit(job, timeout)

    # -- the event loop side -----------------------------------------------------------------

    async def _submit(self, job: Callable[[QueryHandle], T], timeout: float) -> T:
        loop = asyncio.get_running_loop()
        handle = QueryHandle()

        def guarded() -> T:
            try:
                return job(handle)
            finally:
                handle.finish()  # however the job ended, no cancel waits for it any more

        try:
            future = loop.run_in_executor(self.pool.executor, guarded)
        except RuntimeError:  # the pool was closed (the process is shutting down)
            raise SqlError("the database connection pool is closed", reason="unavailable") from None
        timer = loop.call_later(timeout, self._cancel, handle, "timeout")
        try:
            done, _ = await asyncio.wait({future}, timeout=timeout + HARD_STOP_GRACE)
        except asyncio.CancelledError:
            self._cancel(handle, "stop")  # Stop: end the query on the server, not just here
            raise
        finally:
            timer.cancel()
        if not done:  # one long engine call (SQLite's printf) ignores the cancel for a while
            self._cancel(handle, "timeout")
            future.add_done_callback(_retrieved)
            raise SqlError(f"the query was stopped after {timeout:g} s", reason="timeout")
        if future.cancelled():  # the pool closed before the job ran: not this task's Stop
            raise SqlError("the database connection pool is closed", reason="unavailable")
        return future.result()

    def _cancel(self, handle: QueryHandle, reason: CancelReason) -> None:
        if handle.request(reason):
            with contextlib.suppress(RuntimeError):  # the pool is shutting down
                self.pool.cancellers.submit(handle.cancel_on_server, self.rules, self.pool.kill)

    # -- the worker thread side --------------------------------------------------------------

    def _connect(self, handle: QueryHandle, timeout: float) -> Connection:
        if self.backend == "sqlite" and not Path(self.url.database or "").is_file():
            raise SqlError(f"database file not found: {self.url.database}", reason="unavailable")
        try:
            return self.pool.engine.connect()
        except self._dbapi_errors as error:
            raise translate(
                error, handle=handle, timeout=timeout, secret=self.url.password, connecting=True
            ) from None

    def _begin(
        self, connection: Connection, deadline: float, handle: QueryHandle, *, as_person: bool
    ) -> Any:
        """Start the transaction the dialect's way (as the bound identity's role, with its
        settings, for the person's queries); the DBAPI connection, attached."""
        remaining_ms = max(1, int((deadline - time.perf_counter()) * 1000))
        connection.begin()  # the dialect's own begin (DuckDB needs one; most DBAPIs imply it)
        identity = self.identity if as_person else None
        statements = self.rules.begin_statements(
            timeout_ms=remaining_ms,
            writable=self.allow_writes,
            role=identity.role if identity else None,
            settings=identity.settings() if identity else None,
        )
        try:
            for sql, parameters in statements:
                if parameters:
                    connection.exec_driver_sql(sql, parameters)
                else:
                    connection.exec_driver_sql(sql)
        except self._dbapi_errors as error:
            if identity is not None and identity.role is not None:
                raise role_error(identity.role, error) from None
            raise
        dbapi = connection.connection.dbapi_connection
        handle.attach(dbapi, self._connection_id(connection))
        return dbapi

    def _connection_id(self, connection: Connection) -> object:
        sql = self.rules.connection_id_sql()
        if sql is None:
            return None
        info = connection.connection.info
        if "threadline_connection_id" not in info:
            info["threadline_connection_id"] = connection.exec_driver_sql(sql).scalar()
        return info["threadline_connection_id"]

    def _query(
        self, sql: str, max_rows: int, timeout: float, handle: QueryHandle, *, check: bool
    ) -> SqlResult:
        started = time.perf_counter()
        deadline = started + timeout
        if check:
            check_statement(
                sql, self.rules.sqlglot, allow_writes=self.allow_writes, functions=self.functions
            )
        guard = self._guard(deadline, handle, checked=check)
        with self._connect(handle, timeout) as connection:
            try:
                dbapi = self._begin(connection, deadline, handle, as_person=check)
                result = self._execute(dbapi, sql, max_rows, deadline, handle, guard)
                if self.allow_writes:
                    connection.commit()
            except self._dbapi_errors as error:
                raise translate(
                    error, handle=handle, timeout=timeout, guard=guard, secret=self.url.password
                ) from None
            finally:
                handle.finish()
                self._end(connection, guard)
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result

    def _guard(self, deadline: float, handle: QueryHandle, *, checked: bool) -> SqliteGuard | None:
        if self.backend != "sqlite":
            return None
        return SqliteGuard(
            allow_writes=self.allow_writes,
            deadline=deadline,
            cancel=handle.requested,
            functions=self.functions.allowed if checked else None,
        )

    def _execute(
        self,
        dbapi: Any,
        sql: str,
        max_rows: int,
        deadline: float,
        handle: QueryHandle,
        guard: SqliteGuard | None,
    ) -> SqlResult:
        if guard is not None:
            guard.install(dbapi)
        if handle.requested.is_set():
            raise SqlError("the query was cancelled before it started", reason="timeout")
        cursor = dbapi.cursor() if self.allow_writes else self.rules.streaming_cursor(dbapi)
        handle.attach_cursor(cursor)
        try:
            cursor.execute(sql)
            return read_result(
                cursor,
                max_rows=max_rows,
                count_limit=self.count_limit,
                deadline=deadline,
                stopped=lambda _: handle.reason == "timeout" or bool(guard and guard.timed_out),
            )
        finally:
            with contextlib.suppress(Exception):  # a cancelled cursor may refuse to close
                cursor.close()

    def _end(self, connection: Connection, guard: SqliteGuard | None) -> None:
        """Roll back whatever the query did (nothing, when read-only) and clean up."""
        dbapi = connection.connection.dbapi_connection
        try:
            if guard is not None and dbapi is not None:
                SqliteGuard.remove(dbapi)
            connection.rollback()
        except Exception:  # a broken connection must not return to the pool
            connection.invalidate()

    def _with_connection(
        self, work: Callable[[Connection], T], timeout: float, handle: QueryHandle
    ) -> T:
        deadline = time.perf_counter() + timeout
        with self._connect(handle, timeout) as connection:
            try:
                self._begin(connection, deadline, handle, as_person=False)
                return work(connection)
            except self._dbapi_errors as error:
                raise translate(
                    error, handle=handle, timeout=timeout, secret=self.url.password
                ) from None
            finally:
                handle.finish()
                self._end(connection, None)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Take the late result of a query its caller stopped waiting for (never re-raised)."""
    if not future.cancelled():
        future.exception()


def _dbapi_error(dialect: Any) -> type[BaseException]:
    dbapi = getattr(dialect, "loaded_dbapi", None) or getattr(dialect, "dbapi", None)
    error = getattr(dbapi, "Error", None)
    return error if isinstance(error, type) and issubclass(error, BaseException) else OSError
