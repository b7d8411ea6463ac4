"""Start-up checks: can the database be reached, and can its user write?

Threadline never writes (read-only transactions, the statement check), but a database user
that *may* write is one bug away from a write; the safe configuration is a user that may only
read. ``check_database`` answers both questions; ``log_report`` says it in the start-up log
(a WARNING when the user can write or the database is unreachable) and ``threadline doctor``
can print ``report.lines()``.

>>> WriteAccess(status="can_write", details=["superuser"]).message
'the database user can write (superuser): Threadline stays read-only, but grant this user \
SELECT only to be safe'
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from agent_core.database.privileges import (
    OPT_OUT,
    POSTGRES_PRIVILEGES,
    SERVER_ROLES,
    PrivilegedUserError,
    describe,
)
from agent_core.tools.sql import SqlError

if TYPE_CHECKING:
    from agent_core.database.runner import SqlAlchemyRunner

logger = logging.getLogger("threadline.database")

WriteStatus = Literal["read_only", "can_write", "unknown"]

POSTGRES_SUPERUSER = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
POSTGRES_WRITABLE_TABLES = (
    "SELECT n.nspname || '.' || c.relname FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p', 'f') AND n.nspname <> 'information_schema' "
    "AND n.nspname NOT LIKE 'pg\\_%' "
    "AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') ORDER BY 1"
)
POSTGRES_CREATE_SCHEMAS = (
    "SELECT nspname FROM pg_namespace WHERE has_schema_privilege(oid, 'CREATE') "
    "AND nspname <> 'information_schema' AND nspname NOT LIKE 'pg\\_%' ORDER BY 1"
)
MYSQL_GRANTS = "SHOW GRANTS FOR CURRENT_USER()"
MYSQL_WRITE_GRANT = re.compile(
    r"\b(ALL PRIVILEGES|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|FILE|SUPER)\b", re.IGNORECASE
)
SHOWN = 5


class WriteAccess(BaseModel):
    """Whether the configured database user could write, and why we think so."""

    status: WriteStatus
    details: list[str] = []

    @property
    def message(self) -> str:
        why = f" ({'; '.join(self.details)})" if self.details else ""
        if self.status == "can_write":
            return (
                f"the database user can write{why}: Threadline stays read-only, but grant this "
                "user SELECT only to be safe"
            )
        if self.status == "read_only":
            return f"the database user can only read{why}"
        return f"could not tell whether the database user can write{why}"


class DatabaseReport(BaseModel):
    """What the start-up check found; ``refused``: the user is too powerful to be used
    (``agent_core.database.privileges``), so no query will run."""

    url: str
    dialect: str
    reachable: bool
    error: str | None = None
    refused: bool = False
    read_only_mode: str = ""
    write_access: WriteAccess | None = None
    privileged: str | None = None
    """The opt-out's warning: a superuser kept by ``allow_privileged_user``."""

    def lines(self) -> list[str]:
        if self.refused:
            return [
                f"database {self.url} ({self.dialect}): REFUSED: {self.error}",
                "  No question can use it until the configuration changes.",
            ]
        if not self.reachable:
            return [
                f"database {self.url} ({self.dialect}): UNREACHABLE: {self.error}",
                "  Threadline starts anyway; each question that needs data says the database "
                "is unavailable until it is back, and it reconnects by itself.",
            ]
        lines = [f"database {self.url} ({self.dialect}): reachable; {self.read_only_mode}"]
        if self.privileged:
            lines.append(f"  WARNING: {self.privileged}")
        if self.write_access is not None:
            loud = "WARNING: " if self.write_access.status == "can_write" else ""
            lines.append(f"  {loud}{self.write_access.message}")
        return lines


def _listed(kind: str, names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return f"{kind} {', '.join(names[:SHOWN])}{more}"


async def _postgres(runner: SqlAlchemyRunner) -> WriteAccess:
    superuser = await runner.run_trusted(POSTGRES_SUPERUSER)
    if superuser.rows and superuser.rows[0][0]:
        return WriteAccess(status="can_write", details=["superuser"])
    details = []
    tables = [str(r[0]) for r in (await runner.run_trusted(POSTGRES_WRITABLE_TABLES)).rows]
    if tables:
        details.append(_listed("INSERT/UPDATE/DELETE on", tables))
    schemas = [str(r[0]) for r in (await runner.run_trusted(POSTGRES_CREATE_SCHEMAS)).rows]
    if schemas:
        details.append(_listed("CREATE in schema", schemas))
    return WriteAccess(status="can_write" if details else "read_only", details=details)


async def _mysql(runner: SqlAlchemyRunner) -> WriteAccess:
    grants = [str(row[0]) for row in (await runner.run_trusted(MYSQL_GRANTS)).rows]
    writing = [grant for grant in grants if MYSQL_WRITE_GRANT.search(grant.split(" ON ")[0])]
    if writing:
        return WriteAccess(status="can_write", details=writing[:SHOWN])
    return WriteAccess(status="read_only", details=["SELECT grants only"])


async def check_write_access(runner: SqlAlchemyRunner) -> WriteAccess:
    """Whether ``runner``'s database user could write (raises ``SqlError`` when the
    database cannot be reached)."""
    match runner.backend:
        case "postgresql":
            return await _postgres(runner)
        case "mysql" | "mariadb":
            return await _mysql(runner)
        case "sqlite" | "duckdb" if not runner.allow_writes:
            return WriteAccess(status="read_only", details=["the file is opened read-only"])
        case _:
            return WriteAccess(
                status="unknown",
                details=[f"{runner.dialect} has no check here; make sure the user may only read"],
            )


async def check_database(runner: SqlAlchemyRunner) -> DatabaseReport:
    """Reach the database and check its user's write access; never raises."""
    report = DatabaseReport(
        url=runner.masked_url,
        dialect=runner.dialect,
        reachable=False,
        read_only_mode=f"read-only by construction: {runner.rules.read_only_note}",
    )
    try:
        await runner.run_trusted("SELECT 1", timeout=15.0)
        access = await check_write_access(runner)
        privileged = await _kept_privileges(runner)
    except PrivilegedUserError as error:
        return report.model_copy(update={"error": str(error), "reachable": True, "refused": True})
    except SqlError as error:
        return report.model_copy(update={"error": str(error)})
    return report.model_copy(
        update={"reachable": True, "write_access": access, "privileged": privileged}
    )


async def _kept_privileges(runner: SqlAlchemyRunner) -> str | None:
    """What the sandbox opt-out keeps (a PostgreSQL superuser...), said as a warning."""
    if runner.backend != "postgresql" or not runner.pool.options.allow_privileged:
        return None
    rows = (await runner.run_trusted(POSTGRES_PRIVILEGES)).rows
    if not rows:
        return None
    user = str(rows[0][0])
    privileges = (["superuser"] if any(row[2] for row in rows) else []) + sorted(
        {str(row[1]) for row in rows if str(row[1]) in SERVER_ROLES}
    )
    return (
        f"the database user {user!r} {describe(privileges)}: used only because "
        f"[database] {OPT_OUT} = true (never outside a throwaway sandbox)"
    )


def log_report(report: DatabaseReport) -> None:
    """The start-up log lines: ERROR when the user is refused, WARNING when the database is
    unreachable or the user can write."""
    loud = (
        not report.reachable
        or bool(report.privileged)
        or (report.write_access is not None and report.write_access.status == "can_write")
    )
    level = logging.ERROR if report.refused else logging.WARNING if loud else logging.INFO
    for line in report.lines():
        logger.log(level, "%s", line)
