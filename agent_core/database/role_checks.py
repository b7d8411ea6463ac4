"""Start-up and ``threadline doctor`` checks of each mapped data identity: does the role
exist, may Threadline's database user become it, could it write, does it see any table?

PostgreSQL roles are checked by name from the login user's connection (the name is a bound
parameter); a database URL of a group (``[database.urls]``) gets the same check as the
main one (``agent_core.database.checks``).

>>> RoleReport(role="fin", exists=False).problem
"role 'fin' does not exist"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from agent_core.database.runner import SqlAlchemyRunner

_RELATIONS = (
    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND n.nspname <> 'information_schema' "
    "AND n.nspname NOT LIKE 'pg\\_%%' AND has_schema_privilege(r.oid, n.oid, 'USAGE') AND "
)
ROLE_CHECK = (
    "SELECT r.rolname, pg_has_role(current_user, r.oid, 'MEMBER'), "
    f"({_RELATIONS}has_any_column_privilege(r.oid, c.oid, 'SELECT')), "
    f"({_RELATIONS}has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')) "
    "FROM pg_roles r WHERE r.rolname = %(role)s"
)


class RoleReport(BaseModel):
    """What the check found about one mapped PostgreSQL role."""

    role: str
    exists: bool = True
    can_become: bool = True
    readable_tables: int = 0
    writable_tables: int = 0

    @property
    def problem(self) -> str | None:
        """Why queries as this role will fail (None: they will run)."""
        if not self.exists:
            return f"role {self.role!r} does not exist"
        if not self.can_become:
            return (
                f"role {self.role!r} cannot be taken by Threadline's database user (GRANT "
                f"{self.role} TO that user)"
            )
        return None

    @property
    def warning(self) -> str | None:
        """What holds but should not be left so: it could write, or sees nothing."""
        if self.problem:
            return None
        if self.writable_tables:
            return (
                f"role {self.role!r} can write ({self.writable_tables} tables): Threadline "
                "stays read-only, but grant it SELECT only to be safe"
            )
        if not self.readable_tables:
            return f"role {self.role!r} sees no table: its people will get no data"
        return None

    def line(self) -> str:
        if self.problem:
            return f"data role {self.role!r}: PROBLEM: {self.problem}"
        if self.warning:
            return f"data role {self.role!r}: WARNING: {self.warning}"
        return f"data role {self.role!r}: ok, reads {self.readable_tables} tables"


async def check_roles(runner: SqlAlchemyRunner, roles: list[str]) -> list[RoleReport]:
    """One report per role, in order (``SqlError`` when the database cannot be reached)."""

    def read(connection: object) -> list[RoleReport]:
        reports = []
        for role in roles:
            row = connection.exec_driver_sql(ROLE_CHECK, {"role": role}).first()  # type: ignore[attr-defined]
            if row is None:
                reports.append(RoleReport(role=role, exists=False))
                continue
            _, member, readable, writable = row
            reports.append(
                RoleReport(
                    role=role,
                    can_become=bool(member),
                    readable_tables=int(readable),
                    writable_tables=int(writable),
                )
            )
        return reports

    return await runner.with_connection(read, timeout=30.0)
