"""The catalog: every table's columns, types, keys and comments, read with SQLAlchemy's
inspector, and each table rendered once as compact ``CREATE TABLE`` text for prompts.

Names are quoted the database's way (reserved words such as ``"order"``, non-ASCII names
such as ``"größe"``), so SQL the model copies from the schema runs as written. Introspection
uses the inspector's multi-table calls (one round trip per kind per schema, not per table),
so thousands of tables take seconds, not minutes; what a dialect cannot reflect (comments,
foreign keys) is left out rather than failing the whole catalog.

>>> table = TableInfo(name="orders", comment="One row per order", ddl="", columns=[
...     ColumnInfo(name="id", type="INTEGER", primary_key=True)])
>>> table.qualified_name, table.words()
('orders', 'orders One row per order id')
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Connection, inspect
from sqlalchemy.engine import ObjectKind
from sqlalchemy.engine.reflection import Inspector

logger = logging.getLogger(__name__)

SYSTEM_SCHEMAS = frozenset(
    {"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys",
     "INFORMATION_SCHEMA", "temp"}
)  # fmt: skip

CHARS_PER_TOKEN = 4
"""The rough size of a token in schema text: what budgets are counted in."""


def estimate_tokens(text: str) -> int:
    """About how many LLM tokens ``text`` costs (``len / 4``, rounded up)."""
    return -(-len(text) // CHARS_PER_TOKEN)


class ColumnInfo(BaseModel):
    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    comment: str | None = None
    references: str | None = None
    """``table(column)`` this column is a foreign key to."""


class TableInfo(BaseModel):
    """One table or view, and its ``CREATE TABLE`` text as the prompt shows it."""

    schema_name: str | None = None
    name: str
    columns: list[ColumnInfo] = Field(default_factory=list)
    comment: str | None = None
    kind: str = "table"
    ddl: str
    references: list[str] = Field(default_factory=list)
    """Qualified names of the tables its foreign keys point to."""

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}" if self.schema_name else self.name

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.ddl)

    def words(self) -> str:
        """What retrieval matches a question against: names and comments."""
        parts = [self.qualified_name, self.comment or ""]
        for column in self.columns:
            parts += [column.name, column.comment or ""]
        return " ".join(part for part in parts if part)


class Catalog(BaseModel):
    """Every table of one database, as introspected at ``introspected_at``."""

    backend: str
    tables: list[TableInfo]
    introspected_at: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())

    def render(self) -> str:
        return "\n\n".join(table.ddl for table in self.tables)

    @property
    def tokens(self) -> int:
        return sum(table.tokens for table in self.tables)


def _type_text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a type the dialect cannot compile on its own
        return type(value).__name__.upper()


def render_table(table: TableInfo, quote: Callable[[str], str]) -> str:
    """Compact ``CREATE TABLE`` text: one line per column, comments as ``--``."""
    name = ".".join(quote(part) for part in filter(None, (table.schema_name, table.name)))
    keyword = "VIEW" if table.kind == "view" else "TABLE"
    head = f"CREATE {keyword} {name} (" + (f"  -- {_one_line(table.comment)}" if table.comment
                                           else "")  # fmt: skip
    lines = [head]
    for index, column in enumerate(table.columns):
        text = f"  {quote(column.name)} {column.type}"
        if column.primary_key:
            text += " PRIMARY KEY"
        elif not column.nullable:
            text += " NOT NULL"
        if column.references:
            text += f" REFERENCES {column.references}"
        text += "," if index < len(table.columns) - 1 else ""
        if column.comment:
            text += f"  -- {_one_line(column.comment)}"
        lines.append(text)
    return "\n".join([*lines, ");"])


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _safely(what: str, call: Callable[[], dict[Any, Any]]) -> dict[Any, Any]:
    try:
        return call()
    except NotImplementedError:
        return {}
    except Exception:
        logger.warning("schema introspection: could not read %s; leaving it out", what,
                       exc_info=True)  # fmt: skip
        return {}


def _schemas(inspector: Inspector) -> list[str | None]:
    default = inspector.default_schema_name
    try:
        names = inspector.get_schema_names()
    except NotImplementedError:
        names = []
    others = sorted(n for n in names if n != default and n not in SYSTEM_SCHEMAS
                    and not n.startswith(("pg_", "_timescaledb")))  # fmt: skip
    return [None, *others]


def _tables_of(inspector: Inspector, schema: str | None, quote: Callable[[str], str]
               ) -> Iterable[TableInfo]:  # fmt: skip
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
            schema_name=schema, name=name, kind="view" if name in views else "table",
            comment=(comments.get(key) or {}).get("text"), ddl="",
            references=sorted({table for table, _ in references.values()}),
            columns=[
                ColumnInfo(
                    name=c["name"], type=_type_text(c["type"]), nullable=bool(c.get("nullable")),
                    primary_key=c["name"] in primary, comment=c.get("comment"),
                    references=_reference_text(references.get(c["name"]), quote),
                )
                for c in columns[key]
            ],
        )  # fmt: skip
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
