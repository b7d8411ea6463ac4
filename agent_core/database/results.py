"""Reading a result: the first rows kept, the rest counted in batches and dropped.

Memory stays bounded whatever the result's size: at most ``max_rows`` rows are kept, and
counting reads ``BATCH`` rows at a time through a cursor that streams (a server-side cursor
where the database has one). Counting stops at ``count_limit`` rows or at the deadline; the
total is then a lower bound (``total_is_exact=False``), as ``SqlResult`` documents.

>>> import sqlite3
>>> cursor = sqlite3.connect(":memory:").execute("SELECT 1.5, 'a' UNION ALL SELECT 2, 'b'")
>>> read_result(cursor, max_rows=1, count_limit=10, deadline=float("inf")).row_note()
'showing 1 of 2 rows'
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from agent_core.tools.sql import SqlResult

BATCH = 10_000


def plain(value: Any) -> Any:
    """A cell as JSON, charts and tables take it: numbers as ``int``/``float``, times as ISO
    text, ids as text; everything else unchanged.

    >>> plain(Decimal("2.50")), plain(Decimal("3")), plain(dt.date(2024, 5, 1))
    (2.5, 3, '2024-05-01')
    """
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | dt.timedelta):
        return str(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def read_result(
    cursor: Any,
    *,
    max_rows: int,
    count_limit: int,
    deadline: float,
    stopped: Callable[[BaseException], bool] = lambda error: False,
) -> SqlResult:
    """The first ``max_rows`` rows of an executed ``cursor`` and the total row count.

    ``stopped(error)`` says whether an error while counting is the deadline's cancel; the
    rows kept are then returned with a lower-bound total instead of the error."""
    if cursor.description is None:
        return SqlResult(columns=[], rows=[], total_rows=0, rows_affected=cursor.rowcount)
    columns = [str(column[0]) for column in cursor.description]
    rows = [[plain(value) for value in row] for row in cursor.fetchmany(max_rows)]
    counted, exact = [0], True
    if len(rows) == max_rows:
        try:
            exact = _count_rest(cursor, count_limit, deadline, counted)
        except Exception as error:
            if not stopped(error):
                raise
            exact = False  # out of time while counting: the rows are good, the total a bound
    total = len(rows) + counted[0]
    return SqlResult(columns=columns, rows=rows, total_rows=total, total_is_exact=exact)


def _count_rest(cursor: Any, count_limit: int, deadline: float, counted: list[int]) -> bool:
    """Count the remaining rows into ``counted[0]``; True when the count is exact."""
    while counted[0] < count_limit:
        if time.perf_counter() > deadline:
            return False
        batch = cursor.fetchmany(min(BATCH, count_limit - counted[0]))
        if not batch:
            return True
        counted[0] += len(batch)
    return False
