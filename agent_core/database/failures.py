"""Driver errors -> ``SqlError``: the one boundary where database exceptions are translated.

``SqlError.reason`` (``agent_core.tools.sql``) tells the LLM and the person what happened::

    invalid       the SQL is wrong (syntax, unknown column, type error)
    read_only     a write, or a function with side effects, was refused
    timeout       the query ran past its time and was cancelled on the server
    unavailable   the database cannot be reached (down, wrong credentials, missing file)

Messages never hold a password (the URL's password is masked wherever a driver echoes it)
nor a server's file path (``<path>``).

>>> translate_message("FATAL:  password authentication failed for user \\"bo\\"", "")
'unavailable'
"""

from __future__ import annotations

import sqlite3
from typing import Any

from agent_core.database.cancel import QueryHandle
from agent_core.database.sqlite_guard import SqliteGuard
from agent_core.database.urls import mask_text
from agent_core.masking import hide_paths
from agent_core.tools.sql import SqlError, SqlErrorReason

READ_ONLY_STATES = frozenset({"25006"})
"""SQLSTATE ``read_only_sql_transaction`` (PostgreSQL, and others that follow the standard)."""
CANCELLED_STATES = frozenset({"57014"})
"""SQLSTATE ``query_canceled``: the statement timeout, or our cancel."""
MYSQL_READ_ONLY = frozenset({1792, 1836})
MYSQL_TIMEOUT = frozenset({3024, 1317, 1028})
MYSQL_UNAVAILABLE = frozenset({1045, 2002, 2003, 2006, 2013, 2055})

_UNAVAILABLE_WORDS = (
    "could not connect",
    "connection refused",
    "connection to server",
    "password authentication",
    "authentication failed",
    "no such host",
    "could not translate host",
    "server closed the connection",
    "terminating connection",
    "not a database",
    "database is locked",
    "unable to open",
    "connection timed out",
    "access denied",
)


def translate_message(message: str, sqlstate: str) -> SqlErrorReason:
    """The reason a driver's message and SQLSTATE point to (``invalid`` when unsure)."""
    lowered = message.lower()
    if sqlstate in READ_ONLY_STATES or any(
        word in lowered for word in ("read-only", "readonly", "disabled by configuration")
    ):
        return "read_only"
    if sqlstate in CANCELLED_STATES or "statement timeout" in lowered:
        return "timeout"
    if sqlstate.startswith("08") or sqlstate.startswith("28"):
        return "unavailable"  # connection exceptions, invalid authorization
    if any(word in lowered for word in _UNAVAILABLE_WORDS):
        return "unavailable"
    return "invalid"


def _mysql_reason(code: object) -> SqlErrorReason | None:
    if not isinstance(code, int):
        return None
    if code in MYSQL_READ_ONLY:
        return "read_only"
    if code in MYSQL_TIMEOUT:
        return "timeout"
    return "unavailable" if code in MYSQL_UNAVAILABLE else None


def _driver_error(error: BaseException) -> BaseException:
    """The driver's exception inside SQLAlchemy's wrapper (``DBAPIError.orig``)."""
    orig = getattr(error, "orig", None)
    return orig if isinstance(orig, BaseException) else error


def _reason(error: BaseException, *, disconnected: bool) -> SqlErrorReason:
    if disconnected:
        return "unavailable"
    args: tuple[Any, ...] = getattr(error, "args", ())
    mysql = _mysql_reason(args[0]) if args else None
    if mysql is not None:
        return mysql
    sqlstate = str(getattr(error, "sqlstate", None) or getattr(error, "pgcode", None) or "")
    return translate_message(str(error), sqlstate)


def translate(
    error: BaseException,
    *,
    handle: QueryHandle,
    timeout: float,
    guard: SqliteGuard | None = None,
    secret: str | None = None,
    connecting: bool = False,
) -> SqlError:
    """The ``SqlError`` for a driver error raised while connecting or running a query."""
    if guard is not None and guard.refused:
        return SqlError(
            f"refused {guard.refused}: the database is read-only; only SELECT queries and "
            "schema introspection are allowed",
            reason="read_only",
        )
    if handle.reason == "timeout" or (guard is not None and guard.timed_out):
        return SqlError(f"the query was stopped after {timeout:g} s", reason="timeout")
    driver = _driver_error(error)
    message = hide_paths(mask_text(str(driver).strip() or type(driver).__name__, secret))
    disconnected = connecting or bool(getattr(error, "connection_invalidated", False))
    reason = _reason(driver, disconnected=disconnected)
    if isinstance(driver, sqlite3.OperationalError) and connecting:
        reason = "unavailable"
    if reason == "timeout":
        return SqlError(f"the query was stopped after {timeout:g} s ({message})", reason=reason)
    if reason == "read_only":
        return SqlError(f"the database is read-only ({message})", reason=reason)
    if reason == "unavailable":
        return SqlError(f"the database is unavailable ({message})", reason=reason)
    return SqlError(message, reason=reason)


def role_error(role: str, error: BaseException) -> SqlError:
    """The error for a mapped role the database will not let Threadline's user become: it
    does not exist, or that user is not a member of it (never a traceback in chat).

    >>> str(role_error("fin", Exception('role "fin" does not exist')))[:47]
    "your data role 'fin' does not exist in the data"
    """
    driver = str(_driver_error(error)).lower()
    why = (
        "does not exist in the database"
        if "does not exist" in driver
        else "cannot be taken by Threadline's database user (it must be a member of it)"
    )
    return SqlError(
        f"your data role {role!r} {why}: an admin must fix [database.roles]",
        reason="unavailable",
    )
