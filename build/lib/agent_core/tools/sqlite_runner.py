"""``SqliteRunner``: the ``SqlRunner`` for SQLite files (stdlib ``sqlite3``, worker threads).

Read-only is enforced twice: the file is opened ``mode=ro`` and an authorizer refuses
writes, ATTACH and non-introspection PRAGMAs. A progress handler stops a statement at its
deadline or when the awaiting task is cancelled (the user's Stop).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from os import PathLike
from pathlib import Path
from typing import Any

from agent_core.tools.sql import SqlError, SqlResult, SqlRunner

# Everything that changes the database or reaches outside it; refused unless allow_writes.
_WRITE_ACTIONS = frozenset(
    getattr(sqlite3, name)
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_"))
    or name
    in (
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_ALTER_TABLE",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
    )
)
_READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


class _Guard:
    """The authorizer and progress handler of one query, remembering why it stopped it."""

    def __init__(self, *, allow_writes: bool, deadline: float, cancel: threading.Event) -> None:
        self.allow_writes = allow_writes
        self.deadline = deadline
        self.cancel = cancel
        self.refused: str | None = None
        self.timed_out = False

    def authorize(self, action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
        refused = self._refusal(action, arg1, arg2)
        if refused is None:
            return sqlite3.SQLITE_OK
        self.refused = refused
        return sqlite3.SQLITE_DENY

    def _refusal(self, action: int, arg1: str | None, arg2: str | None) -> str | None:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return "ATTACH/DETACH"
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            return f"the {arg2} function"
        if self.allow_writes:
            return None
        if action in _WRITE_ACTIONS:
            return "statements that change the database"
        if action == sqlite3.SQLITE_PRAGMA and arg1 not in _READ_PRAGMAS:
            return f"PRAGMA {arg1}"
        return None

    def progress(self) -> int:
        if self.cancel.is_set():
            return 1
        if time.perf_counter() > self.deadline:
            self.timed_out = True
            return 1
        return 0


class SqliteRunner(SqlRunner):
    """Runs queries on a SQLite file in a worker thread; read-only unless ``allow_writes``.

    Read-only is enforced twice: the file is opened ``mode=ro`` and an authorizer refuses
    writes, ATTACH and non-introspection PRAGMAs. Queries stop at ``timeout`` (and when the
    awaiting task is cancelled). After the first ``max_rows`` rows the rest are counted,
    not kept, up to ``count_limit`` more.

    >>> import asyncio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> db = sqlite3.connect(path)
    >>> _ = db.executescript("CREATE TABLE t(n); INSERT INTO t VALUES (1), (2);")
    >>> db.close()
    >>> asyncio.run(SqliteRunner(path).run_sql("SELECT n FROM t", max_rows=1)).row_note()
    'showing 1 of 2 rows'
    """

    dialect = "SQLite"

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        allow_writes: bool = False,
        count_limit: int = 1_000_000,
    ) -> None:
        self.path = Path(path)
        self.allow_writes = allow_writes
        self.count_limit = count_limit

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self._run, sql, max_rows, timeout, cancel)
        except asyncio.CancelledError:
            cancel.set()  # the worker thread's progress handler stops the query
            raise

    async def describe(self) -> str:
        result = await self.run_sql(
            "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name",
            max_rows=500,
        )
        return ";\n\n".join(str(row[0]) for row in result.rows) + ";"

    def _connect(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise SqlError(f"database file not found: {self.path}", reason="unavailable")
        mode = "rw" if self.allow_writes else "ro"
        try:
            return sqlite3.connect(f"{self.path.resolve().as_uri()}?mode={mode}", uri=True)
        except sqlite3.Error as error:
            raise SqlError(f"cannot open the database: {error}", reason="unavailable") from error

    def _run(self, sql: str, max_rows: int, timeout: float, cancel: threading.Event) -> SqlResult:
        started = time.perf_counter()
        guard = _Guard(allow_writes=self.allow_writes, deadline=started + timeout, cancel=cancel)
        connection = self._connect()
        try:
            connection.set_authorizer(guard.authorize)
            connection.set_progress_handler(guard.progress, 1000)
            try:
                result = self._execute(connection, sql, max_rows, guard)
                if self.allow_writes:
                    connection.commit()
            except sqlite3.Error as error:
                raise _translate(error, guard, timeout) from error
        finally:
            connection.close()
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result

    def _execute(
        self, connection: sqlite3.Connection, sql: str, max_rows: int, guard: _Guard
    ) -> SqlResult:
        cursor = connection.execute(sql)
        if cursor.description is None:
            return SqlResult(columns=[], rows=[], total_rows=0, rows_affected=cursor.rowcount)
        columns = [str(d[0]) for d in cursor.description]
        rows = [list(row) for row in cursor.fetchmany(max_rows)]
        total, exact = len(rows), True
        try:
            for _ in cursor:
                total += 1
                if total - len(rows) >= self.count_limit:
                    exact = False
                    break
        except sqlite3.OperationalError:
            if not guard.timed_out:
                raise
            exact = False  # out of time while counting: the rows are good, the total a bound
        return SqlResult(columns=columns, rows=rows, total_rows=total, total_is_exact=exact)


def _translate(error: sqlite3.Error, guard: _Guard, timeout: float) -> SqlError:
    if guard.refused:
        return SqlError(
            f"refused {guard.refused}: the database is read-only; only SELECT queries and "
            "schema introspection are allowed",
            reason="read_only",
        )
    if guard.timed_out:
        return SqlError(f"the query was stopped after {timeout:g} s", reason="timeout")
    message = str(error)
    if "readonly" in message or "read-only" in message:
        return SqlError(f"the database is read-only ({message})", reason="read_only")
    if any(s in message for s in ("not a database", "database is locked", "unable to open")):
        return SqlError(f"the database is unavailable ({message})", reason="unavailable")
    return SqlError(message, reason="invalid")
