"""Tables in Slack: ``table`` blocks, with the rows as a CSV when they do not all fit.

A ``table`` block holds at most 100 rows (header included) of at most 20 cells, and a
message at most one table. Bigger results show the first 99 rows and attach the rows as a
CSV file.

>>> from agent_core.components import DataFrameComponent
>>> [m] = render_dataframe(DataFrameComponent.from_records([{"n": i} for i in range(150)]))
>>> (len(m.blocks[0]["rows"]), m.files[0].filename)
(100, 'table.csv')
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from slack_sdk.models.blocks import TableBlock

from adapters.number_format import format_number
from adapters.slack.elements import context, sections
from adapters.slack.escape import escape
from adapters.slack.limits import (
    MAX_TABLE_COLUMNS,
    MAX_TABLE_ROWS,
    FileUpload,
    SlackMessage,
    pack_messages,
)
from adapters.slack.markdown import truncate
from agent_core.components import DataFrameComponent
from agent_core.tools.tabular import spreadsheet_safe

MAX_CELL_TEXT = 500
EMPTY_CELL = "—"


def _cell_text(value: Any) -> str:
    if value is None or value == "":
        return EMPTY_CELL
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return format_number(value)  # the same in Teams (it once showed 968424.3 raw)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return truncate(str(value), MAX_CELL_TEXT)


def _raw(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": text}


def table_block(df: DataFrameComponent, columns: Sequence[str], rows: int) -> dict[str, Any]:
    """A ``table`` block of the first ``rows`` rows over ``columns``, header row first."""
    header = [_raw(truncate(c, MAX_CELL_TEXT) or EMPTY_CELL) for c in columns]
    body = [[_raw(_cell_text(row.get(c))) for c in columns] for row in df.rows[:rows]]
    settings: list[dict[str, Any] | None] = [
        {"align": "right"} if df.column_types.get(c) == "number" else {"is_wrapped": True}
        for c in columns
    ]
    return TableBlock(rows=[header, *body], column_settings=settings).to_dict()


def csv_file(df: DataFrameComponent, name: str) -> FileUpload:
    """All of ``df.rows`` as a CSV upload (every column; text that a spreadsheet would run
    as a formula is quoted, ``spreadsheet_safe``)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([spreadsheet_safe(c) for c in df.columns])
    writer.writerows([[spreadsheet_safe(row.get(c)) for c in df.columns] for row in df.rows])
    return FileUpload(filename=f"{name}.csv", content=out.getvalue().encode(), title=name)


def slug(title: str | None, default: str) -> str:
    """A file name from ``title``. ``slug("Top 10 customers!", "table") == "top-10-customers"``"""
    name = re.sub(r"[^A-Za-z0-9]+", "-", title or "").strip("-").lower()
    return name[:60] or default


def _table_note(
    df: DataFrameComponent, shown_rows: int, shown_cols: int, csv_name: str | None
) -> str:
    parts = []
    if df.row_count > shown_rows:
        parts.append(f"Showing {shown_rows:,} of {df.row_count:,} rows")
    if len(df.columns) > shown_cols:
        parts.append(f"{shown_cols} of {len(df.columns)} columns")
    if csv_name:
        held = f"the first {len(df.rows):,} rows are" if df.is_truncated else "all the rows are"
        parts.append(f"{held} attached as `{csv_name}`")
    return " · ".join(parts)


def render_dataframe(df: DataFrameComponent) -> list[SlackMessage]:
    """A table message, with a CSV of the rows when they do not all fit the table block."""
    title_blocks = sections(f"*{escape(df.title)}*") if df.title else []
    summary = df.title or f"Table: {df.row_count:,} rows"
    if not df.rows or not df.columns:
        description = escape(df.description) if df.description else None
        blocks = [*title_blocks, *sections("_No rows._"), *context(description)]
        return pack_messages(blocks, text=summary)
    columns = df.columns[:MAX_TABLE_COLUMNS]
    shown = min(len(df.rows), MAX_TABLE_ROWS - 1)
    needs_csv = len(df.rows) > shown or len(df.columns) > len(columns)
    name = slug(df.title, "table")
    files = [csv_file(df, name)] if needs_csv else []
    note = _table_note(df, shown, len(columns), f"{name}.csv" if needs_csv else None)
    blocks = [
        *title_blocks,
        table_block(df, columns, shown),
        *context(escape(df.description) if df.description else None, escape(note)),
    ]
    return pack_messages(blocks, text=f"{summary} ({df.row_count:,} rows)", files=files)
