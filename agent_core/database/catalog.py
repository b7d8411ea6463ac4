"""The catalog: every table's columns, types, keys and comments (``introspection`` reads
them), and each table rendered once as compact ``CREATE TABLE`` text for prompts.

Names are quoted the database's way (reserved words such as ``"order"``, non-ASCII names
such as ``"größe"``), so SQL the model copies from the schema runs as written.

>>> table = TableInfo(name="orders", comment="One row per order", ddl="", columns=[
...     ColumnInfo(name="id", type="INTEGER", primary_key=True)])
>>> table.qualified_name, table.words()
('orders', 'orders One row per order id')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from agent_core.clock import utcnow

SYSTEM_SCHEMAS = frozenset(
    {
        "information_schema",
        "pg_catalog",
        "pg_toast",
        "mysql",
        "performance_schema",
        "sys",
        "INFORMATION_SCHEMA",
        "temp",
    }
)

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
    introspected_at: str = Field(default_factory=lambda: utcnow().isoformat())

    def render(self) -> str:
        return "\n\n".join(table.ddl for table in self.tables)

    @property
    def tokens(self) -> int:
        return sum(table.tokens for table in self.tables)


def type_text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a type the dialect cannot compile on its own
        return type(value).__name__.upper()


def render_table(table: TableInfo, quote: Callable[[str], str]) -> str:
    """Compact ``CREATE TABLE`` text: one line per column, comments as ``--``."""
    name = ".".join(quote(part) for part in filter(None, (table.schema_name, table.name)))
    keyword = "VIEW" if table.kind == "view" else "TABLE"
    head = f"CREATE {keyword} {name} (" + (
        f"  -- {one_line(table.comment)}" if table.comment else ""
    )
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
            text += f"  -- {one_line(column.comment)}"
        lines.append(text)
    return "\n".join([*lines, ");"])


def one_line(text: str) -> str:
    return " ".join(text.split())[:300]
