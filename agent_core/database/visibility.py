"""What one PostgreSQL role may read, so the model only learns what the asker may see.

The catalog is introspected once, as the login user (``SchemaSource``); for each role the
tables (and, where only some columns are granted, the columns) it may ``SELECT`` are read
with ``has_table_privilege`` / ``has_column_privilege`` *as that role*, and the schema
index, training examples and notes are filtered to them. Each role's index is cached until
the catalog is refreshed; at most ``MAX_ROLES`` are kept.

A training example is kept when every table its SQL reads is visible; a note when it names
no table the role cannot see (by name, as a word).

>>> from agent_core.database.catalog import Catalog, ColumnInfo, TableInfo
>>> catalog = Catalog(backend="postgresql", tables=[
...     TableInfo(name="orders", ddl="", columns=[ColumnInfo(name="id", type="INT")]),
...     TableInfo(name="salaries", ddl="", columns=[ColumnInfo(name="pay", type="INT")])])
>>> [t.name for t in visible_catalog(catalog, {"orders": None}, str).tables]
['orders']
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_core.database.catalog import Catalog, render_table
from agent_core.database.schema_index import SchemaIndex, tables_in
from agent_core.database.training import Training

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from agent_core.database.runner import SqlAlchemyRunner

MAX_ROLES = 64

Visible = dict[str, frozenset[str] | None]
"""Qualified table name (as the catalog names it) -> its readable columns (None: all)."""

_TABLES = """
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname
            ELSE n.nspname || '.' || c.relname END,
       has_table_privilege(r.name, c.oid, 'SELECT')
FROM (SELECT coalesce(%(role)s, current_user)::name AS name) r,
     pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
  AND has_schema_privilege(r.name, n.oid, 'USAGE')
  AND has_any_column_privilege(r.name, c.oid, 'SELECT')
"""

_COLUMNS = """
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname
            ELSE n.nspname || '.' || c.relname END, a.attname
FROM (SELECT coalesce(%(role)s, current_user)::name AS name) r,
     pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
  AND has_schema_privilege(r.name, n.oid, 'USAGE')
  AND NOT has_table_privilege(r.name, c.oid, 'SELECT')
  AND has_column_privilege(r.name, c.oid, a.attnum, 'SELECT')
"""


def read_visible(connection: Connection, role: str | None) -> Visible:
    """The tables and columns ``role`` (None: the connected user) may read; the role is a
    bound parameter, never SQL."""
    parameters = {"role": role}
    visible: dict[str, Any] = {}
    for name, whole in connection.exec_driver_sql(_TABLES, parameters):
        visible[str(name)] = None if whole else set()
    for name, column in connection.exec_driver_sql(_COLUMNS, parameters):
        if visible.get(str(name)) is not None:
            visible[str(name)].add(str(column))
    return {key: None if value is None else frozenset(value) for key, value in visible.items()}


def visible_catalog(catalog: Catalog, visible: Visible, quote: Callable[[str], str]) -> Catalog:
    """``catalog`` cut to what ``visible`` allows; a table with only some columns readable
    is rendered again with those (``quote``: the dialect's identifier quoting)."""
    tables = []
    for table in catalog.tables:
        if table.qualified_name not in visible:
            continue
        columns = visible[table.qualified_name]
        if columns is not None:
            kept = [column for column in table.columns if column.name in columns]
            table = table.model_copy(update={"columns": kept})
            table.ddl = render_table(table, quote)
        tables.append(table)
    return catalog.model_copy(update={"tables": tables})


def visible_training(training: Training, catalog: Catalog, visible: Visible) -> Training:
    """Examples reading only visible tables; notes naming no hidden table."""
    seen = {key.rsplit(".", 1)[-1].lower() for key in visible}
    hidden = {t.name.lower() for t in catalog.tables if t.qualified_name not in visible} - seen
    examples = [e for e in training.examples if tables_in(e.sql) <= seen]
    if not hidden:
        return training.model_copy(update={"examples": examples})
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(hidden))) + r")\b", re.I)
    notes = [note for note in training.notes if not pattern.search(note.text)]
    return Training(notes=notes, examples=examples)


class RoleViews:
    """Each role's ``SchemaIndex`` over the same catalog, read once and cached."""

    def __init__(self, runner: SqlAlchemyRunner, *, max_roles: int = MAX_ROLES) -> None:
        self.runner = runner
        self.max_roles = max_roles
        self._cache: OrderedDict[tuple[str, str | None], SchemaIndex] = OrderedDict()

    async def index(self, base: SchemaIndex, role: str | None) -> SchemaIndex:
        """``base`` as ``role`` may see it (``SqlError`` when the database cannot say)."""
        key = (base.catalog.introspected_at, role)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        visible = await self.runner.with_connection(
            lambda connection: read_visible(connection, role), timeout=60.0
        )
        quote = self.runner.pool.engine.dialect.identifier_preparer.quote
        catalog = visible_catalog(base.catalog, visible, quote)
        index = SchemaIndex(catalog, visible_training(base.training, base.catalog, visible))
        self._cache[key] = index
        while len(self._cache) > self.max_roles:
            self._cache.popitem(last=False)
        return index
