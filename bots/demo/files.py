"""The scripted demo model's side of shared files: it shows what is in them.

A question that comes with files carries a note of the tables they became
(``agent_core.tools.files.files_note``); the demo model then queries each table's first rows
with ``query_files`` (as Claude would) and says what each file holds, from the rows the tool
returned.

>>> from agent_core.database.file_tables import FileTable
>>> from agent_core.tools.files import files_note
>>> note = files_note([FileTable("sales", "sales, 2024.csv", 2, [("n", "BIGINT")])])
>>> question, tables = shared_tables("what's in this file?" + note)
>>> question, tables
("what's in this file?", [SharedTable(name='sales', source='sales, 2024.csv', rows=2)])
>>> first_rows_sql(tables[0])
'SELECT * FROM sales LIMIT 10'
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass

NOTE_HEAD = "\n\n[Files shared with this message are tables for `query_files`"
TABLE_LINE = re.compile(r"^- ([a-z_][a-z0-9_]*) \(from (.+), ([\d,]+) rows?\): ", re.MULTILINE)
MAX_TABLES = 3
FIRST_ROWS = 10


@dataclass(frozen=True)
class SharedTable:
    """A table the files note names: its SQL name, the file it came from, its rows."""

    name: str
    source: str
    rows: int


def shared_tables(message: str) -> tuple[str, list[SharedTable]] | None:
    """The question and the tables its files note names; None when no file came with it
    (a note of files that could not be read names no table)."""
    question, head, note = message.partition(NOTE_HEAD)
    if not head:
        return None
    tables = [
        SharedTable(found[1], found[2], int(found[3].replace(",", "")))
        for found in TABLE_LINE.finditer(note)
    ]
    return question, tables


def first_rows_sql(table: SharedTable) -> str:
    return f"SELECT * FROM {table.name} LIMIT {FIRST_ROWS}"


def no_table_answer() -> str:
    return (
        "I could not read the file you shared, so there is nothing to query (the note above "
        "says why). Share a CSV, TSV, XLSX, Parquet or JSON file and ask about it."
    )


def describe_files(tables: Sequence[SharedTable], results: Sequence[str]) -> str:
    """What each file holds, from ``query_files``' result for its first rows."""
    parts = []
    for table, result in zip(tables, results, strict=False):
        head, _, body = result.partition("\n")
        if not head.startswith("Query returned "):
            parts.append(f"I could not read **{table.source}**: {result}")
            continue
        columns = next(csv.reader(body.splitlines()), [])
        plural = "" if table.rows == 1 else "s"
        shown = min(table.rows, FIRST_ROWS)
        parts.append(
            f"**{table.source}** is the table `{table.name}`: {table.rows:,} row{plural}, "
            f"{len(columns)} columns ({', '.join(f'`{c}`' for c in columns[:12])}). "
            f"Its first {shown} rows are in the table."
        )
    parts.append(
        "I only show what is in a file; set `ANTHROPIC_API_KEY` and Claude answers any "
        "question about it with `query_files`."
    )
    return "\n\n".join(parts)
