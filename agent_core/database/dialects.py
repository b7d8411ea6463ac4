"""What each database offers to keep the agent read-only, bounded in time and stoppable.

One ``DialectRules`` per SQLAlchemy backend says how the runner opens connections, what it
runs at the start of every query's transaction, whether the server enforces a statement
timeout, and how a running query is cancelled on the server:

============  =========================================  ======================  ===========
database      read-only by construction                  timeout (server side)   Stop/timeout
============  =========================================  ======================  ===========
PostgreSQL    session ``default_transaction_read_only``  ``statement_timeout``   libpq cancel
              + ``transaction_read_only`` per query
MySQL         session ``TRANSACTION READ ONLY``          ``MAX_EXECUTION_TIME``  ``KILL QUERY``
              + ``START TRANSACTION READ ONLY``
SQLite        file opened ``mode=ro`` + an authorizer    (progress handler)      interrupt
DuckDB        ``read_only`` open, no external access     (none: interrupted)     interrupt
SQL Server    none exists: every transaction is rolled   ``LOCK_TIMEOUT`` only   ODBC cancel
              back; use a ``db_datareader`` login
Snowflake     none exists: use a role with SELECT only   ``STATEMENT_TIMEOUT``   (timeout)
BigQuery      none exists: grant Data Viewer only        (none)                  (none)
============  =========================================  ======================  ===========

Everywhere, the statement check (``agent_core.database.statements``) admits one read
statement calling only allowed functions, and the transaction is always rolled back; a
PostgreSQL connection is also ``DISCARD ALL``-ed before it is reused (an advisory lock or a
setting never reaches the next query), and refused outright when its user is a superuser or
may reach the server's files or other sessions (``agent_core.database.privileges``).
Embedded engines are bounded by ``EngineLimits`` (memory, threads, value length). Where the
database has no read-only mode, the start-up check (``agent_core.database.checks``) says
when the user can write.

A PostgreSQL query's transaction starts with one statement: read-only, its timeout, and
the asker's role and settings ("data follows the asker"), each ``SET LOCAL``:

>>> sql, values = rules_for("postgresql").begin_statements(timeout_ms=5000, role="fin")[0]
>>> sql.count("set_config"), sorted(values.values())
(3, ['5000', 'fin', 'on', 'role', 'statement_timeout', 'transaction_read_only'])
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.engine import URL

from agent_core.database.limits import EngineLimits

DEFAULT_LIMITS = EngineLimits()

Statement = tuple[str, dict[str, str]]
"""SQL and its parameters (``%(name)s``)."""

CancelMethod = Literal["connection", "cursor", "interrupt", "kill_query", "none"]
"""``connection``: the driver cancels the running query (libpq); ``cursor``: the ODBC cursor's
cancel; ``interrupt``: the embedded engine stops; ``kill_query``: another connection kills it."""


@dataclass(frozen=True)
class DialectRules:
    """How one kind of database is opened, bounded and cancelled (defaults: assume nothing)."""

    backend: str
    label: str
    sqlglot: str | None
    server_timeout: bool = False
    cancel: CancelMethod = "none"
    read_only_note: str = "no read-only mode: use a database user that may only read"

    def connect_args(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> dict[str, Any]:
        """Driver arguments for every new connection."""
        return {}

    def creator(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> Callable[[], Any] | None:
        """A function that opens a DBAPI connection, when the URL alone cannot say how."""
        return None

    def on_connect(self, dbapi_connection: Any, *, allow_privileged: bool) -> None:
        """Checks on every new connection before it serves a query (PostgreSQL: refuse a
        superuser, ``agent_core.database.privileges``)."""

    def discard_session(self, dbapi_connection: Any) -> None:
        """After the rollback of a connection returned to the pool: drop whatever outlives a
        transaction (PostgreSQL: advisory locks, settings), so the next query starts new."""

    def session_sql(self, *, timeout_ms: int, writable: bool = False) -> list[str]:
        """Statements run at the start of each query's transaction."""
        return []

    def begin_statements(
        self,
        *,
        timeout_ms: int,
        writable: bool = False,
        role: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> list[Statement]:
        """The statements (with their parameters) that start a query's transaction: read-only,
        bounded in time and, where the dialect sets one per transaction, as ``role`` with the
        person's ``settings`` (PostgreSQL)."""
        return [(sql, {}) for sql in self.session_sql(timeout_ms=timeout_ms, writable=writable)]

    def connection_id_sql(self) -> str | None:
        """How to learn the server's id of a connection (for ``KILL QUERY``)."""
        return None

    def kill_sql(self, connection_id: object) -> str | None:
        """The statement another connection runs to cancel a query."""
        return None

    def streaming_cursor(self, dbapi_connection: Any) -> Any:
        """A cursor that fetches rows in batches instead of all at once."""
        return dbapi_connection.cursor()


class _Postgres(DialectRules):
    def connect_args(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> dict[str, Any]:
        options = "" if writable else "-c default_transaction_read_only=on"
        args: dict[str, Any] = {"application_name": "threadline", "connect_timeout": 5}
        return {**args, "options": options} if options else args

    def begin_statements(
        self,
        *,
        timeout_ms: int,
        writable: bool = False,
        role: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> list[Statement]:
        # one round trip: set_config(..., true) is SET LOCAL, with every value a bound
        # parameter (a role name is never formatted into SQL); all of it ends with the
        # transaction, so nothing reaches the pooled connection's next query
        values = {} if writable else {"transaction_read_only": "on"}
        values["statement_timeout"] = str(int(timeout_ms))
        if role is not None:
            values["role"] = role
        values.update(settings or {})
        calls = [f"set_config(%(k{n})s, %(v{n})s, true)" for n in range(len(values))]
        params = {
            f"{kind}{n}": text
            for n, item in enumerate(values.items())
            for kind, text in zip("kv", item, strict=True)
        }
        return [("SELECT " + ", ".join(calls), params)]

    def streaming_cursor(self, dbapi_connection: Any) -> Any:
        # a named (server-side) cursor: rows come over in batches, never all at once
        return dbapi_connection.cursor(name="threadline_query")

    def on_connect(self, dbapi_connection: Any, *, allow_privileged: bool) -> None:
        from agent_core.database.privileges import refuse_privileged

        refuse_privileged(dbapi_connection, allow=allow_privileged)

    def discard_session(self, dbapi_connection: Any) -> None:
        # DISCARD ALL: session advisory locks (pg_advisory_unlock_all), settings (RESET
        # ALL), prepared statements, temporary tables; it runs outside a transaction
        dbapi_connection.autocommit = True
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute("DISCARD ALL")
            cursor.close()
        finally:
            dbapi_connection.autocommit = False


class _MySql(DialectRules):
    def connect_args(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"connect_timeout": 5}
        if not writable:
            args["init_command"] = "SET SESSION TRANSACTION READ ONLY"
        return args

    def session_sql(self, *, timeout_ms: int, writable: bool = False) -> list[str]:
        start = "START TRANSACTION" if writable else "START TRANSACTION READ ONLY"
        return [f"SET SESSION MAX_EXECUTION_TIME = {int(timeout_ms)}", start]

    def connection_id_sql(self) -> str:
        return "SELECT CONNECTION_ID()"

    def kill_sql(self, connection_id: object) -> str:
        return f"KILL QUERY {int(str(connection_id))}"  # an integer, never text to inject

    def streaming_cursor(self, dbapi_connection: Any) -> Any:
        import pymysql.cursors

        return dbapi_connection.cursor(pymysql.cursors.SSCursor)


class _Sqlite(DialectRules):
    def creator(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> Callable[[], Any]:
        path = Path(url.database or "")
        mode = "rw" if writable else "ro"

        def connect() -> sqlite3.Connection:
            # never creates a file: a missing database is an error, not an empty database
            uri = f"{path.resolve().as_uri()}?mode={mode}"
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            limits.apply_sqlite(connection)
            return connection

        return connect


class _DuckDb(DialectRules):
    def connect_args(
        self, url: URL, *, writable: bool, limits: EngineLimits = DEFAULT_LIMITS
    ) -> dict[str, Any]:
        in_memory = url.database in (None, "", ":memory:")
        config = limits.duckdb_config()
        if not writable:
            config["enable_external_access"] = False
        return {"read_only": not (writable or in_memory), "config": config}


class _SqlServer(DialectRules):
    def session_sql(self, *, timeout_ms: int, writable: bool = False) -> list[str]:
        return [f"SET LOCK_TIMEOUT {int(timeout_ms)}"]


class _Snowflake(DialectRules):
    def session_sql(self, *, timeout_ms: int, writable: bool = False) -> list[str]:
        seconds = max(1, -(-int(timeout_ms) // 1000))
        return [f"ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {seconds}"]


_RULES: dict[str, DialectRules] = {
    rules.backend: rules
    for rules in (
        _Postgres(
            "postgresql",
            "PostgreSQL",
            "postgres",
            server_timeout=True,
            cancel="connection",
            read_only_note="read-only sessions and transactions",
        ),
        _MySql(
            "mysql",
            "MySQL",
            "mysql",
            server_timeout=True,
            cancel="kill_query",
            read_only_note="read-only sessions and transactions",
        ),
        _MySql(
            "mariadb",
            "MariaDB",
            "mysql",
            server_timeout=True,
            cancel="kill_query",
            read_only_note="read-only sessions and transactions",
        ),
        _Sqlite(
            "sqlite",
            "SQLite",
            "sqlite",
            cancel="interrupt",
            read_only_note="the file is opened read-only",
        ),
        _DuckDb(
            "duckdb",
            "DuckDB",
            "duckdb",
            cancel="interrupt",
            read_only_note="the file is opened read-only, without file or network access",
        ),
        _SqlServer("mssql", "SQL Server", "tsql", cancel="cursor"),
        _Snowflake("snowflake", "Snowflake", "snowflake", server_timeout=True),
        DialectRules("bigquery", "BigQuery", "bigquery"),
    )
}


def rules_for(backend: str) -> DialectRules:
    """The rules of a SQLAlchemy backend name; unknown ones get the cautious defaults.

    >>> rules_for("mysql").kill_sql(42), rules_for("oracle").label
    ('KILL QUERY 42', 'oracle')
    """
    return _RULES.get(backend) or DialectRules(backend, backend, None)
