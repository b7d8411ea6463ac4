"""Shared files into DuckDB tables: which format a file is, what its tables are called, and
the statements that load it. Nothing in a file is executed: CSV, TSV, JSON and Parquet are
read by DuckDB's own readers, and an XLSX workbook by openpyxl with ``data_only`` (a
formula's cached value, never the formula), each sheet written to CSV first.

>>> kind_of("Sales 2024.CSV", b"a,b\\n"), table_name("Sales 2024.CSV")
('csv', 'sales_2024')
>>> kind_of("notes.docx", b"PK")
Traceback (most recent call last):
...
agent_core.database.file_formats.FileLoadError: notes.docx is not a file I can read as a \
table (CSV, TSV, XLSX, Parquet or JSON)
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from agent_core.errors import ValidationError

FileKind = Literal["csv", "tsv", "xlsx", "parquet", "json"]

SUFFIXES: dict[str, FileKind] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
SUPPORTED = "CSV, TSV, XLSX, Parquet or JSON"
FILES_EXTRA = "pip install 'threadline[files]'"


class FileLoadError(ValidationError):
    """A shared file that cannot become a table; the message is for the person who shared
    it (it names the file, never its content)."""


def duckdb_module() -> Any:
    """DuckDB, or ``FileLoadError`` naming the extra that brings it."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise FileLoadError(f"reading shared files needs DuckDB: {FILES_EXTRA}") from None
    return duckdb


def kind_of(name: str, head: bytes) -> FileKind:
    """The file's format, from its name, checked against its first bytes (a renamed binary
    is refused here, not half-read later)."""
    kind = SUFFIXES.get(Path(name).suffix.lower())
    if kind is None:
        raise FileLoadError(f"{name} is not a file I can read as a table ({SUPPORTED})")
    if kind == "xlsx" and not head.startswith(b"PK\x03\x04"):
        raise FileLoadError(f"{name} is not a valid XLSX workbook (it may be corrupt)")
    if kind == "parquet" and not head.startswith(b"PAR1"):
        raise FileLoadError(f"{name} is not a valid Parquet file (it may be corrupt)")
    return kind


def table_name(name: str, suffix: str = "") -> str:
    """A plain SQL name for the file's table: lower case, letters, digits and ``_``.

    >>> table_name("2024 Q1: revenue (final).xlsx", "Sheet 1")
    't_2024_q1_revenue_final_sheet_1'
    """
    stem = f"{Path(name).stem} {suffix}".strip().lower()
    plain = re.sub(r"[^a-z0-9]+", "_", stem).strip("_")[:60] or "file"
    return plain if plain[0].isalpha() else f"t_{plain}"


def too_big(name: str, limit: int) -> str:
    """The message for a file over the limit.

    >>> too_big("big.csv", 25 * 1024 * 1024), too_big("small.csv", 2048)
    ('big.csv is larger than 25 MB, the most I read; share a smaller extract', \
'small.csv is larger than 2 KB, the most I read; share a smaller extract')
    """
    size = f"{limit / 1024 / 1024:,.0f} MB" if limit >= 1024 * 1024 else f"{limit // 1024} KB"
    return f"{name} is larger than {size}, the most I read; share a smaller extract"


def quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def load_statement(kind: FileKind, table: str, *, all_text: bool = False) -> str:
    """The ``CREATE TABLE`` that reads the file at the statement's one parameter (``?``);
    ``all_text`` keeps every CSV column as text (the retry after a type guess failed)."""
    text = ", all_varchar=true" if all_text else ""
    reader = {
        "csv": f"read_csv(?, header=true{text})",
        "tsv": f"read_csv(?, delim='\\t', header=true{text})",
        "json": "read_json(?)",
        "parquet": "read_parquet(?)",
        "xlsx": f"read_csv(?, header=true{text})",
    }[kind]
    return f"CREATE OR REPLACE TABLE {quoted(table)} AS SELECT * FROM {reader}"


def xlsx_sheets(name: str, content: bytes, *, max_cells: int) -> Iterator[tuple[str, bytes]]:
    """Each non-empty sheet of the workbook as (sheet name, CSV bytes); formulas give their
    cached value (never evaluated), at most ``max_cells`` cells in all."""
    try:
        from openpyxl import load_workbook
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise FileLoadError(f"reading XLSX files needs openpyxl: {FILES_EXTRA}") from None
    try:
        book = load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError) as error:
        raise FileLoadError(f"{name} is not a valid XLSX workbook (it may be corrupt)") from error
    cells = [0]
    try:
        for sheet in book.worksheets:
            sheet.reset_dimensions()  # a sheet's own dimension may lie: rows padded to it
            text = _sheet_csv(name, sheet.iter_rows(values_only=True), cells, max_cells)
            if text:
                yield sheet.title, text
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError) as error:
        raise FileLoadError(f"{name} is not a valid XLSX workbook (it may be corrupt)") from error
    finally:
        book.close()


def _sheet_csv(
    name: str, rows: Iterator[tuple[Any, ...]], cells: list[int], max_cells: int
) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        cells[0] += max(len(row), 1)  # every cell openpyxl makes counts, empty ones too
        if cells[0] > max_cells:
            raise FileLoadError(f"{name} has more than {max_cells:,} cells; share a smaller one")
        if all(value is None for value in row):
            continue
        writer.writerow(_cell(value) for value in row)
    return buffer.getvalue().encode()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value
