"""``DataFrameComponent`` -> an Adaptive Card ``Table`` that fits one Teams message.

Rows are shown up to the component's ``max_rows_displayed`` and ``ROW_CAP``, then cut until
the card fits ``CARD_BUDGET``; columns beyond ``COLUMN_CAP`` are left out. Whatever is left out
is said in a note under the table, and the rows the component holds are offered as CSV.

>>> from agent_core.components import DataFrameComponent
>>> df = DataFrameComponent.from_records([{"n": i} for i in range(300)])
>>> rendered = render_dataframe(df)
>>> rendered.shown_rows, rendered.card["body"][-1]["text"]
(50, 'Showing 50 of 300 rows.')
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from adapters.number_format import format_number
from adapters.teams import elements
from adapters.teams.limits import payload_size
from agent_core.components import DataFrameComponent
from agent_core.tools.tabular import spreadsheet_safe

ROW_CAP = 50
COLUMN_CAP = 8
CELL_CHARS = 120
CARD_BUDGET = 34_000
"""UTF-16 bytes one table card may take, leaving room in its message for text and entities."""


@dataclass(slots=True)
class RenderedTable:
    """The table card, how many rows it shows, and the CSV when it could not show all.

    >>> RenderedTable(card={}, shown_rows=0, csv=None).shown_rows
    0
    """

    card: elements.Element
    shown_rows: int
    csv: bytes | None
    """The rows the component holds, as CSV, when the card could not show them all."""
    csv_rows: str = ""
    """What the CSV holds, in words: "all 40 rows", "the first 100 of 400 rows"."""


def format_cell(value: Any) -> str:
    """A cell as text: numbers as ``adapters.number_format`` writes them, dates ISO."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return format_number(value)  # the same in Slack, in the asker's locale
    if isinstance(value, dt.date):
        return value.isoformat()
    text = " ".join(str(value).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _alignments(df: DataFrameComponent, columns: list[str]) -> list[Literal["Left", "Right"]]:
    return ["Right" if df.column_types.get(c) == "number" else "Left" for c in columns]


def _note(df: DataFrameComponent, shown: int, columns: list[str]) -> str | None:
    parts: list[str] = []
    total = max(df.row_count, len(df.rows))
    if shown < total:
        parts.append(f"Showing {shown:,} of {total:,} rows.")
    hidden = len(df.columns) - len(columns)
    if hidden > 0:
        parts.append(f"{hidden} more column{'s' if hidden > 1 else ''} not shown.")
    return " ".join(parts) or None


def _card(df: DataFrameComponent, columns: list[str], shown: int) -> elements.Element:
    body: list[elements.Element] = []
    if df.title:
        body.append(elements.plain_block(df.title, weight="Bolder", size="Medium"))
    if df.description:
        body.append(elements.plain_block(df.description, subtle=True))
    rows = [[format_cell(row.get(c)) for c in columns] for row in df.rows[:shown]]
    if columns:
        body.append(elements.table(columns, rows, align=_alignments(df, columns)))
    note = _note(df, shown, columns)
    if note:
        body.append(elements.text_block(note, subtle=True, size="Small"))
    fallback = f"{df.title or 'Table'}: {max(df.row_count, len(df.rows))} rows"
    return elements.card(body, fallback_text=fallback, full_width=True)


def to_csv(df: DataFrameComponent) -> bytes:
    """Every row the component holds, every column, as UTF-8 CSV (with BOM, for Excel;
    text that a spreadsheet would run as a formula is quoted, ``spreadsheet_safe``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([spreadsheet_safe(c) for c in df.columns])
    for row in df.rows:
        writer.writerow(
            ["" if row.get(c) is None else spreadsheet_safe(row.get(c)) for c in df.columns]
        )
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def render_dataframe(df: DataFrameComponent, *, budget: int = CARD_BUDGET) -> RenderedTable:
    """The table card: as many rows as the caps and ``budget`` allow, and CSV when cut."""
    columns = df.columns[:COLUMN_CAP]
    shown = min(len(df.rows), max(df.max_rows_displayed, 0), ROW_CAP)
    card = _card(df, columns, shown)
    size = payload_size(card)
    while shown > 1 and size > budget:
        # Rows weigh about the same: scale the count to the budget, at least one row less.
        shown = max(1, min(shown - 1, int(shown * budget / size * 0.97)))
        card = _card(df, columns, shown)
        size = payload_size(card)
    cut = shown < len(df.rows) or len(columns) < len(df.columns)
    csv = to_csv(df) if cut else None
    return RenderedTable(card=card, shown_rows=shown, csv=csv, csv_rows=rows_held(df))


def rows_held(df: DataFrameComponent) -> str:
    """The rows the component holds, in words (its CSV holds no more).

    >>> rows_held(DataFrameComponent.from_records([{"n": 1}] * 100, total_rows=400))
    'the first 100 of 400 rows'
    """
    total = max(df.row_count, len(df.rows))
    if len(df.rows) < total:
        return f"the first {len(df.rows):,} of {total:,} rows"
    return f"all {total:,} row{'' if total == 1 else 's'}"
