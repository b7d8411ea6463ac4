"""What the start-up log and ``threadline doctor`` say about one database and each identity
mapped in it: the database's own URL (``agent_core.database.checks``), each group's URL
(``[database.urls]``) the same way, and each PostgreSQL role (``[database.roles]``:
``agent_core.database.role_checks``).

>>> AccessReport(name="finance").problems()
[]
"""

from __future__ import annotations

import logging
from typing import Protocol

from pydantic import BaseModel

from agent_core.database.checks import DatabaseReport, check_database, log_report
from agent_core.database.identity import DataIdentity
from agent_core.database.role_checks import RoleReport, check_roles
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_source import SchemaSource
from agent_core.database.settings import DatabaseConfig
from agent_core.tools.sql import SqlError

logger = logging.getLogger("threadline.database")


class Checked(Protocol):
    """What the checks read of a ``DataAccess`` (``agent_core.database.access``)."""

    name: str
    config: DatabaseConfig
    default: SqlAlchemyRunner

    def source(self, url_name: str | None = None) -> SchemaSource: ...

    def runner(self, identity: DataIdentity) -> SqlAlchemyRunner: ...


class AccessReport(BaseModel):
    """One database, its group URLs and its roles, as checked."""

    name: str
    database: DatabaseReport | None = None
    urls: dict[str, DatabaseReport] = {}
    roles: list[RoleReport] = []
    connected_roles: dict[str, DatabaseReport] = {}
    """Snowflake: each role, connected to as ``role=``."""
    roles_error: str | None = None
    """Why the roles could not be checked (the database unreachable)."""

    def problems(self) -> list[str]:
        """What stops people's questions: unreachable or refused URLs, roles that fail."""
        found = [f"role {r.role!r}: {r.problem}" for r in self.roles if r.problem]
        for kind, reports in (("url", self.urls), ("role", self.connected_roles)):
            for key, report in reports.items():
                if report.refused or not report.reachable:
                    found.append(f"{kind} {key!r}: {report.error}")
        return found

    def lines(self) -> list[str]:
        lines = list(self.database.lines()) if self.database else []
        for key, report in self.urls.items():
            lines += [f"[database.urls] {key}: {line.strip()}" for line in report.lines()]
        for role, report in self.connected_roles.items():
            lines += [f"data role {role!r}: {line.strip()}" for line in report.lines()]
        lines += [report.line() for report in self.roles]
        if self.roles_error:
            lines.append(f"data roles not checked: {self.roles_error}")
        return lines


async def check_access(access: Checked, *, database: DatabaseReport | None = None) -> AccessReport:
    """Check the database (unless ``database`` is its report already), each group URL and
    each mapped role; never raises."""
    database = database or await check_database(access.default)
    report = AccessReport(name=access.name, database=database)
    for key in access.config.urls:
        report.urls[key] = await check_database(access.source(key).runner)
    roles = list(dict.fromkeys(access.config.roles.values()))
    backend = access.default.backend
    if roles and backend == "postgresql":
        try:
            report.roles = await check_roles(access.default, roles)
        except SqlError as error:
            report.roles_error = str(error)
    elif roles and backend == "snowflake":
        for role in roles:
            runner = access.runner(DataIdentity(database=access.name, role=role))
            report.connected_roles[role] = await check_database(runner)
    return report


def log_access(report: AccessReport) -> None:
    """The start-up log: the database's lines (``log_report``), then each group URL and
    role, loudly when one fails or could write."""
    if report.database is not None:
        log_report(report.database)
    for label, reports in (("[database.urls]", report.urls), ("data role", report.connected_roles)):
        for key, found in reports.items():
            level = logging.INFO if found.reachable and not found.refused else logging.WARNING
            for line in found.lines():
                logger.log(level, "%s %s: %s", label, key, line.strip())
    for role in report.roles:
        level = logging.ERROR if role.problem else logging.WARNING if role.warning else logging.INFO
        logger.log(level, "%s", role.line())
    if report.roles_error:
        logger.warning("data roles not checked: %s", report.roles_error)
