"""Reading a database's catalog with SQLAlchemy's inspector (``introspect``).

Introspection uses the inspector's multi-table calls (one round trip per kind per schema, not
per table), so thousands of tables take seconds, not minutes; what a dialect cannot reflect
(comments, foreign keys) is left out rather than failing the whole catalog. DuckDB is read
from its own catalog functions (``duckdb_catalog``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection, inspect
from sqlalchemy.engine import ObjectKind
from sqlalchemy.engine.reflection import Inspector

from agent_core.database.catalog import (
    SYSTEM_SCHEMAS,
    Catalog,
    ColumnInfo,
    TableInfo,
    render_table,
    type_text,
)

logger = logging.getLogger(__name__)


def _safely(what: str, call: Callable[[], dict[Any, Any]]) -> dict[Any, Any]:
    try:
        return call()
    except NotImplementedError:
        return {}
    except Exception:
        logger.warning(
            "schema introspection: could not read %s; leaving it out", what, exc_info=True
        )
        return {}


def _schemas(inspector: Inspector) -> list[str | None]:
    default = inspector.default_schema_name
    try:
        names = inspector.get_schema_names()
    except NotImplementedError:
        names = []
    others = sorted(
        n
        for n in names
        if n != default and n not in SYSTEM_SCHEMAS and not n.startswith(("pg_", "_timescaledb"))
    )
    return [None, *others]


def _tables_of(
    inspector: Inspector, schema: str | None, quote: Callable[[str], str]
) -> Iterable[TableInfo]:
    kind = ObjectKind.TABLE | ObjectKind.VIEW
    columns = _safely("columns", lambda: inspector.get_multi_columns(schema, kind=kind))
    keys = _safely("primary keys", lambda: inspector.get_multi_pk_constraint(schema, kind=kind))
    foreign = _safely("foreign keys", lambda: inspector.get_multi_foreign_keys(schema, kind=kind))
    comments = _safely("comments", lambda: inspector.get_multi_table_comment(schema, kind=kind))
    views = set(_safely("views", lambda: dict.fromkeys(inspector.get_view_names(schema))))
    for key in sorted(columns, key=lambda k: (k[0] or "", k[1])):
        name = key[1]
        primary = set((keys.get(key) or {}).get("constrained_columns") or ())
        references = _references(foreign.get(key) or [], schema)
        table = TableInfo(
            schema_name=schema,
            name=name,
            kind="view" if name in views else "table",
            comment=(comments.get(key) or {}).get("text"),
            ddl="",
            references=sorted({table for table, _ in references.values()}),
            columns=[
                ColumnInfo(
                    name=c["name"],
                    type=type_text(c["type"]),
                    nullable=bool(c.get("nullable")),
                    primary_key=c["name"] in primary,
                    comment=c.get("comment"),
                    references=_reference_text(references.get(c["name"]), quote),
                )
                for c in columns[key]
            ],
        )
        table.ddl = render_table(table, quote)
        yield table


def _references(foreign_keys: list[Any], schema: str | None) -> dict[str, tuple[str, str]]:
    """Constrained column -> (qualified table, column) it refers to."""
    found: dict[str, tuple[str, str]] = {}
    for key in foreign_keys:
        target_schema = key.get("referred_schema") or schema
        table = key["referred_table"]
        target = f"{target_schema}.{table}" if target_schema else table
        for mine, theirs in zip(key["constrained_columns"], key["referred_columns"], strict=False):
            found[mine] = (target, theirs)
    return found


def _reference_text(target: tuple[str, str] | None, quote: Callable[[str], str]) -> str | None:
    if target is None:
        return None
    table, column = target
    return f"{'.'.join(quote(part) for part in table.split('.'))}({quote(column)})"


def introspect(connection: Connection) -> Catalog:
    """The catalog of every non-system schema ``connection`` can see."""
    quote = connection.dialect.identifier_preparer.quote
    if connection.dialect.name == "duckdb":
        from agent_core.database.duckdb_catalog import introspect_duckdb

        return introspect_duckdb(connection, quote)
    inspector = inspect(connection)
    tables: list[TableInfo] = []
    for schema in _schemas(inspector):
        tables.extend(_tables_of(inspector, schema, quote))
    return Catalog(backend=connection.dialect.name, tables=tables)
