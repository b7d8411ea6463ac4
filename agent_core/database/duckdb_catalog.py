"""DuckDB's catalog from its own ``duckdb_tables()`` / ``duckdb_columns()`` /
``duckdb_constraints()`` functions (its SQLAlchemy dialect reflects through emulated
``pg_catalog`` views that lag behind DuckDB releases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from agent_core.database.catalog import Catalog, ColumnInfo, TableInfo, render_table

TABLES = (
    "SELECT schema_name, table_name, comment, 'table' FROM duckdb_tables() WHERE NOT internal "
    "UNION ALL SELECT schema_name, view_name, comment, 'view' FROM duckdb_views() "
    "WHERE NOT internal ORDER BY 1, 2"
)
COLUMNS = (
    "SELECT schema_name, table_name, column_name, data_type, is_nullable, comment "
    "FROM duckdb_columns() WHERE NOT internal ORDER BY schema_name, table_name, column_index"
)
CONSTRAINTS = (
    "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
    "referenced_table, referenced_column_names FROM duckdb_constraints() "
    "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
)


def _keys(rows: list[Any]) -> tuple[dict[tuple[str, str], set[str]], dict[Any, Any]]:
    primary: dict[tuple[str, str], set[str]] = {}
    foreign: dict[tuple[str, str, str], tuple[str, str]] = {}
    for schema, table, kind, columns, target, target_columns in rows:
        if kind == "PRIMARY KEY":
            primary.setdefault((schema, table), set()).update(columns or ())
        else:
            for mine, theirs in zip(columns or (), target_columns or (), strict=False):
                foreign[(schema, table, mine)] = (target, theirs)
    return primary, foreign


def introspect_duckdb(connection: Connection, quote: Callable[[str], str]) -> Catalog:
    run = connection.exec_driver_sql
    default = run("SELECT current_schema()").scalar()
    primary, foreign = _keys(list(run(CONSTRAINTS)))
    columns: dict[tuple[str, str], list[ColumnInfo]] = {}
    for schema, table, name, kind, nullable, comment in run(COLUMNS):
        target = foreign.get((schema, table, name))
        columns.setdefault((schema, table), []).append(
            ColumnInfo(
                name=name,
                type=str(kind),
                nullable=bool(nullable),
                comment=comment,
                primary_key=name in primary.get((schema, table), set()),
                references=f"{quote(target[0])}({quote(target[1])})" if target else None,
            )
        )
    tables = []
    for schema, name, comment, kind in run(TABLES):
        own = columns.get((schema, name), [])
        table = TableInfo(
            schema_name=None if schema == default else schema,
            name=name,
            comment=comment,
            kind=kind,
            columns=own,
            ddl="",
            references=sorted(
                {t for (s, n, _), (t, _) in foreign.items() if (s, n) == (schema, name)}
            ),
        )
        table.ddl = render_table(table, quote)
        tables.append(table)
    return Catalog(backend="duckdb", tables=tables)
