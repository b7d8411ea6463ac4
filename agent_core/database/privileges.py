"""Database users Threadline refuses: PostgreSQL superusers and members of the roles that
reach beyond the database (server files, programs, other sessions).

A read-only transaction does not stop a superuser (``COPY ... TO PROGRAM``, ``dblink``
back into the server commits), nor ``pg_read_server_files`` (``pg_read_file``) or
``pg_signal_backend`` (``pg_terminate_backend``). Every new connection is checked
(``agent_core.database.dialects``); a user that is, or may become (``SET ROLE``), one of
these is refused with ``PrivilegedUserError`` before any query runs, so the mapped roles of
"data follows the asker" (which the login user must be able to become) are covered too.
``[database] allow_privileged_user = true`` turns the refusal into a loud warning: for a
throwaway sandbox only.

>>> str(PrivilegedUserError("bo", ["superuser", "pg_signal_backend"]))[:66]
"refused: the database user 'bo' is a superuser and may become pg_s"
"""

from __future__ import annotations

import logging
from typing import Any

from agent_core.tools.sql import SqlError

logger = logging.getLogger("threadline.database")

SERVER_ROLES = (
    "pg_execute_server_program",
    "pg_read_server_files",
    "pg_signal_backend",
    "pg_write_server_files",
)
"""PostgreSQL's predefined roles whose members reach the server's files, programs or other
sessions."""

POSTGRES_PRIVILEGES = (
    "SELECT current_user, r.rolname, r.rolsuper FROM pg_roles r "
    "WHERE pg_has_role(current_user, r.oid, 'MEMBER') AND (r.rolsuper OR r.rolname IN ("
    + ", ".join(f"'{role}'" for role in SERVER_ROLES)
    + ")) ORDER BY r.rolsuper DESC, r.rolname"
)
"""The superuser roles and server roles the connected user is or may become."""

OPT_OUT = "allow_privileged_user"


class PrivilegedUserError(SqlError):
    """The database user is too powerful for a read-only agent; nothing runs."""

    def __init__(self, user: str, privileges: list[str]) -> None:
        self.user = user
        self.privileges = privileges
        super().__init__(
            f"refused: the database user {user!r} {describe(privileges)}, which a read-only "
            "transaction does not contain; connect as a user with SELECT grants only (or set "
            f"[database] {OPT_OUT} = true, for a throwaway sandbox only)",
            reason="unavailable",
        )


def describe(privileges: list[str]) -> str:
    """``is a superuser and may become pg_signal_backend``.

    >>> describe(["pg_read_server_files"])
    'may become pg_read_server_files'
    """
    roles = [p for p in privileges if p != "superuser"]
    parts = ["is a superuser"] if "superuser" in privileges else []
    if roles:
        parts.append(f"may become {', '.join(roles)}")
    return " and ".join(parts)


def postgres_privileges(dbapi_connection: Any) -> tuple[str, list[str]]:
    """(current user, its dangerous privileges) on a fresh DBAPI connection; the check's
    transaction is rolled back."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(POSTGRES_PRIVILEGES)
        rows = cursor.fetchall()
        cursor.execute("SELECT current_user")
        user = str(cursor.fetchone()[0])
    finally:
        cursor.close()
        dbapi_connection.rollback()
    superuser = any(row[2] for row in rows)
    roles = sorted({str(row[1]) for row in rows if str(row[1]) in SERVER_ROLES})
    return user, (["superuser"] if superuser else []) + roles


def refuse_privileged(dbapi_connection: Any, *, allow: bool) -> None:
    """Raise ``PrivilegedUserError`` for a superuser or a member of ``SERVER_ROLES`` (with
    ``allow``: a WARNING instead, every connection)."""
    user, privileges = postgres_privileges(dbapi_connection)
    if not privileges:
        return
    if not allow:
        raise PrivilegedUserError(user, privileges)
    logger.warning(
        "WARNING: the database user %r %s; allowed only because [database] %s = true "
        "(never outside a throwaway sandbox)",
        user,
        describe(privileges),
        OPT_OUT,
    )
