"""Plain-text renderings of tabular results: compact CSV for the LLM, aligned text for people.

>>> print(text_table(["name", "revenue"], [("Acme", 1200.5), ("Globex", None)]))
name   | revenue
-------+--------
Acme   |  1200.5
Globex |
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

Row = Sequence[Any]


def cell_value(value: Any) -> Any:
    """A JSON-friendly cell: blobs become ``<N bytes>``, everything else is kept."""
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A cell for a CSV people open in Excel or Sheets: text that a spreadsheet would run as a
    formula (``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM``) gets a leading ``'`` (OWASP's CSV
    injection advice); numbers and other text are kept.

    >>> [spreadsheet_safe(v) for v in ("=1+1", "-5", -5, "ok", None)]
    ["'=1+1", "'-5", -5, 'ok', None]
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def format_number(value: float) -> str:
    """Short float text: two decimals at most from 1 up, four significant digits below.

    >>> [format_number(v) for v in (1200.5, 3.0, 0.001234, 2.5e16)]
    ['1200.5', '3', '0.001234', '2.5e+16']
    """
    if abs(value) >= 1e15 or value != value:
        return f"{value:.6g}"
    if abs(value) >= 1 or value == 0:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


def _cell_text(value: Any, max_width: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = format_number(value)
    else:
        text = str(cell_value(value)).replace("\n", " ")
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def bounded_csv(columns: Sequence[str], rows: Sequence[Row], *, max_chars: int) -> tuple[str, int]:
    """CSV of the header and as many leading rows as fit in ``max_chars``.

    Returns the text and how many rows it holds; the header is always included.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    included = 0
    for row in rows:
        mark = buffer.tell()
        writer.writerow([_cell_text(v, 200) for v in row])
        if buffer.tell() > max_chars:
            buffer.seek(mark)
            buffer.truncate()
            break
        included += 1
    return buffer.getvalue().rstrip("\n"), included


def text_table(
    columns: Sequence[str], rows: Sequence[Row], *, max_rows: int = 20, max_width: int = 30
) -> str:
    """An aligned text table of the first ``max_rows`` rows (numbers right-aligned)."""
    shown = [[_cell_text(v, max_width) for v in row] for row in rows[:max_rows]]
    header = [_cell_text(c, max_width) for c in columns]
    widths = [max([len(header[i]), *(len(r[i]) for r in shown)]) for i in range(len(header))]
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows[:max_rows])
        for i in range(len(header))
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ]
        return " | ".join(padded).rstrip()

    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("-+-".join("-" * w for w in widths))
    lines.extend(line(r) for r in shown)
    return "\n".join(lines)
