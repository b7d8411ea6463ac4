"""``FileTables``: the files people share, as DuckDB tables of their own conversation.

Each *scope* (one person in one conversation: ``file_scope`` in ``agent_core.tools.files``)
has its own DuckDB database file under ``root``; nothing is shared between scopes, so a
file never reaches another person, thread or profile. Loading runs Threadline's own
statements (``agent_core.database.file_formats``); a file's tables are staged, then
published together. The LLM's queries (``runner(scope)``) run read-only with file access
locked (``agent_core.database.file_queries``); a runner may join a database DuckDB can
open, read-only as ``db``, when its caller says so (``agent_core.tools.files`` decides who
may: those who may run ``run_sql``, as the data identity ``run_sql`` gives them).

>>> import asyncio, tempfile
>>> files = FileTables(Path(tempfile.mkdtemp()))
>>> [t.name for t in asyncio.run(files.add("ana@thread", "sales.csv", b"region,n\\nEU,3\\n"))]
['sales']
>>> asyncio.run(files.runner("ana@thread").run_sql("SELECT n FROM sales")).rows
[[3]]
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.clock import SYSTEM_CLOCK
from agent_core.database.file_formats import (
    FileKind,
    FileLoadError,
    duckdb_module,
    kind_of,
    load_statement,
    quoted,
    table_name,
    too_big,
    xlsx_sheets,
)
from agent_core.database.file_queries import Attached, ScopeRunner
from agent_core.database.limits import EngineLimits
from agent_core.database.xlsx_bounds import MAX_RATIO, MAX_UNZIPPED_BYTES, check_workbook
from agent_core.tools.sql import SqlRunner

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class FileLimits:
    """How much a shared file may hold, and how long its tables are kept.

    >>> FileLimits().max_bytes // 1024 // 1024
    25
    """

    max_bytes: int = 25 * 1024 * 1024
    max_tables: int = 20
    """Tables one person may have in one conversation."""
    max_cells: int = 5_000_000
    """Cells of one XLSX workbook (a small zip can hold a huge sheet)."""
    max_unzipped_bytes: int = MAX_UNZIPPED_BYTES
    """How large an XLSX workbook may be once decompressed."""
    max_ratio: float = MAX_RATIO
    """How many times one part of a workbook may inflate."""
    memory_limit: str = "512MB"
    keep_seconds: float = 7 * 24 * 3600.0
    """A conversation's tables are dropped this long after its last file was shared."""


@dataclass(frozen=True)
class FileTable:
    """One table made from a shared file: its name, the file, its size and columns.

    >>> FileTable("sales", "sales.csv", 2, [("region", "VARCHAR")]).describe()
    'sales (from sales.csv, 2 rows): region VARCHAR'
    """

    name: str
    source: str
    rows: int
    columns: list[tuple[str, str]] = field(default_factory=list)

    def describe(self, *, max_columns: int = 60) -> str:
        """One line for the prompt; names from the file are cut at 80 characters and the
        columns at ``max_columns`` (a file's names are not a channel for long text)."""
        shown = [f"{_sql_name(name[:80])} {kind}" for name, kind in self.columns[:max_columns]]
        if len(self.columns) > max_columns:
            shown.append(f"... and {len(self.columns) - max_columns} more columns")
        plural = "" if self.rows == 1 else "s"
        return f"{self.name} (from {self.source[:80]}, {self.rows:,} row{plural}): " + ", ".join(
            shown
        )


def _sql_name(name: str) -> str:
    """A column name as SQL needs it: bare when plain, else double-quoted.

    >>> _sql_name("amount"), _sql_name("Order Date")
    ('amount', '"Order Date"')
    """
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else quoted(name)


class FileTables:
    """The store; see the module docstring."""

    def __init__(
        self,
        root: Path,
        *,
        limits: FileLimits | None = None,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self.root = root
        self.limits = limits or FileLimits()
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}

    def path(self, scope: str) -> Path:
        """The scope's database file (its name says nothing about the scope)."""
        return self.root / f"{hashlib.sha256(scope.encode()).hexdigest()[:40]}.duckdb"

    def lock(self, scope: str) -> asyncio.Lock:
        """The scope's lock: one load or query of a scope at a time in this process."""
        return self._locks.setdefault(scope, asyncio.Lock())

    async def add(self, scope: str, name: str, content: bytes) -> list[FileTable]:
        """Load the file ``name`` into the scope's tables (one per XLSX sheet); its tables.
        Raises ``FileLoadError`` with a message for the person who shared it."""
        if len(content) > self.limits.max_bytes:
            raise FileLoadError(too_big(name, self.limits.max_bytes))
        if not content.strip():
            raise FileLoadError(f"{name} is empty")
        kind = kind_of(name, content[:8])
        async with self.lock(scope):
            return await asyncio.to_thread(self._load, scope, name, kind, content)

    def has_tables(self, scope: str) -> bool:
        """Whether ``scope`` has any table (without opening its database)."""
        return self.path(scope).exists()

    async def tables(self, scope: str) -> list[FileTable]:
        """The scope's tables, newest file last."""
        if not self.path(scope).exists():
            return []
        async with self.lock(scope):
            return await asyncio.to_thread(self._read_tables, scope)

    def runner(self, scope: str, *, attach: Attached | None = None) -> SqlRunner:
        """A ``SqlRunner`` over the scope's tables (read-only:
        ``agent_core.database.file_queries``), with ``attach`` joined as ``db``."""
        return ScopeRunner(
            self.path(scope), self.lock(scope), config=self.config(locked=True), attach=attach
        )

    def sweep(self) -> int:
        """Drop the databases of conversations idle for ``keep_seconds``; how many."""
        cutoff = self._clock() - self.limits.keep_seconds
        dropped = 0
        for path in self.root.glob("*.duckdb*"):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    dropped += 1
        return dropped

    # --- the worker thread side -----------------------------------------------------------

    def _load(self, scope: str, name: str, kind: FileKind, content: bytes) -> list[FileTable]:
        """All the file's tables in one transaction (a workbook whose third sheet fails
        leaves none); a database left without tables is removed."""
        self.root.mkdir(parents=True, exist_ok=True)
        parts = self._parts(name, kind, content)
        path = self.path(scope)
        try:
            with (
                tempfile.TemporaryDirectory(dir=self.root) as scratch,
                duckdb_module().connect(str(path), config=self.config()) as connection,
            ):
                self._check_room(connection, name, {table for table, _, _ in parts})
                staged = []
                try:
                    for table, part_kind, data in parts:
                        source = Path(scratch) / f"{table}.{part_kind}"
                        source.write_bytes(data)
                        _create(connection, name, STAGING + table, part_kind, source)
                        staged.append(table)
                    _publish(connection, staged)
                finally:
                    for table in staged:
                        connection.execute(f"DROP TABLE IF EXISTS {quoted(STAGING + table)}")
                made = {table for table, _, _ in parts}
                return [t for t in _tables(connection) if t.name in made]
        except BaseException:
            self._drop_if_empty(path)
            raise

    def _check_room(self, connection: Any, name: str, tables: set[str]) -> None:
        names = {row[0] for row in connection.execute(TABLE_NAMES).fetchall()}
        if len(names | tables) > self.limits.max_tables:
            raise FileLoadError(
                f"{name} would make more than {self.limits.max_tables} tables in this "
                "conversation; start a new thread for more files"
            )

    def _drop_if_empty(self, path: Path) -> None:
        if not path.exists():
            return
        with duckdb_module().connect(str(path), config=self.config()) as connection:
            empty = not connection.execute(TABLE_NAMES).fetchall()
        if empty:
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)

    def _parts(self, name: str, kind: FileKind, content: bytes) -> list[tuple[str, str, bytes]]:
        """(table, format, bytes) for each table the file makes."""
        if kind != "xlsx":
            return [(table_name(name), kind, content)]
        limits = self.limits
        check_workbook(
            name,
            content,
            max_cells=limits.max_cells,
            max_unzipped_bytes=limits.max_unzipped_bytes,
            max_ratio=limits.max_ratio,
        )
        sheets = list(xlsx_sheets(name, content, max_cells=limits.max_cells))
        if not sheets:
            raise FileLoadError(f"{name} has no data in any sheet")
        if len(sheets) == 1:
            return [(table_name(name), "xlsx", sheets[0][1])]
        return [(table_name(name, sheet), "xlsx", data) for sheet, data in sheets]

    def _read_tables(self, scope: str) -> list[FileTable]:
        with duckdb_module().connect(
            str(self.path(scope)), read_only=True, config=self.config(locked=True)
        ) as connection:
            return _tables(connection)

    def config(self, *, locked: bool = False) -> dict[str, Any]:
        config = EngineLimits(memory_limit=self.limits.memory_limit).duckdb_config()
        if locked:
            config |= {"enable_external_access": False, "autoload_known_extensions": False}
        return config


STAGING = "__loading__"
"""A file's tables are loaded under this prefix, then published together."""


def _publish(connection: Any, staged: list[str]) -> None:
    """Replace the tables of ``staged`` with their loaded copies, in one transaction."""
    connection.begin()
    for table in staged:
        connection.execute(f"DROP TABLE IF EXISTS {quoted(table)}")
        connection.execute(f"ALTER TABLE {quoted(STAGING + table)} RENAME TO {quoted(table)}")
    connection.commit()


TABLE_NAMES = (
    f"SELECT table_name FROM duckdb_tables() WHERE NOT internal AND NOT starts_with(table_name, "
    f"'{STAGING}')"
)


def _create(connection: Any, name: str, table: str, kind: str, source: Path) -> None:
    """Create ``table`` from ``source``; a CSV whose guessed types fail further down is
    read again as text."""
    duckdb = duckdb_module()
    statement = load_statement(kind, table)  # type: ignore[arg-type]
    try:
        connection.execute(statement, [str(source)])
    except duckdb.ConversionException:
        if kind not in ("csv", "tsv", "xlsx"):
            raise FileLoadError(f"{name} could not be read: its values do not fit") from None
        connection.execute(
            load_statement(kind, table, all_text=True),  # type: ignore[arg-type]
            [str(source)],
        )
    except duckdb.OutOfMemoryException:
        raise FileLoadError(f"{name} is too large to load; share a smaller extract") from None
    except duckdb.Error as error:
        first = str(error).splitlines()[0].replace(str(source), name)[:200]  # never the path
        raise FileLoadError(f"{name} could not be read as {kind.upper()}: {first}") from None
    label = name.replace("'", "''")
    connection.execute(f"COMMENT ON TABLE {quoted(table)} IS '{label}'")


def _tables(connection: Any) -> list[FileTable]:
    found = connection.execute(
        "SELECT table_name, comment FROM duckdb_tables() WHERE NOT internal ORDER BY table_oid"
    ).fetchall()
    tables = []
    for name, comment in found:
        columns = connection.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
            "ORDER BY column_index",
            [name],
        ).fetchall()
        rows = connection.execute(f"SELECT count(*) FROM {quoted(name)}").fetchone()[0]
        tables.append(FileTable(name, comment or name, int(rows), [tuple(c) for c in columns]))
    return tables
