"""Alerts: a read-only query and a condition on its first row, checked without the model.

The agent writes the rule once, when the alert is made (``agent_core.schedules.authoring``);
the owner confirms it. Each run then only executes the query, as the owner, and compares one
value with a number (or asks whether any row came back). The model is called again only to
explain an alert that fired.

A condition is true on a *transition*: ``fires(previous, now)`` is true when the condition
holds now and did not at the last check (an alert's first check counts as "did not").
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_core.errors import ThreadlineError
from agent_core.tools.sql import SqlResult

Operator = Literal["<", "<=", ">", ">=", "=", "!=", "rows", "no rows"]
_COMPARE = {
    "<": lambda value, limit: value < limit,
    "<=": lambda value, limit: value <= limit,
    ">": lambda value, limit: value > limit,
    ">=": lambda value, limit: value >= limit,
    "=": lambda value, limit: value == limit,
    "!=": lambda value, limit: value != limit,
}


class AlertValueError(ThreadlineError, ValueError):
    """The query's value cannot be compared (not a number, no such column).

    >>> str(AlertValueError("'n/a' is not a number"))
    "'n/a' is not a number"
    """


class AlertCheck(BaseModel):
    """One check's outcome: whether the condition holds, and the value it was judged on.

    >>> AlertCheck(holds=True, value=87.0).value
    87.0
    """

    model_config = ConfigDict(frozen=True)

    holds: bool
    value: float | None = None
    rows: int = 0


class AlertRule(BaseModel):
    """The query an alert runs and its condition (``column operator threshold``).

    ``column`` names the column of the first row compared (default: the first column);
    ``rows`` / ``no rows`` ask only whether the query returned any row.

    >>> rule = AlertRule(sql="SELECT count(*) AS orders FROM orders", operator="<",
    ...                  threshold=100, column="orders")
    >>> rule.describe()
    'orders < 100'
    >>> rule.check(SqlResult(columns=["orders"], rows=[[87]], total_rows=1)).holds
    True
    """

    model_config = ConfigDict(frozen=True)

    sql: str = Field(min_length=1, max_length=20_000)
    operator: Operator
    threshold: float | None = None
    column: str | None = Field(None, max_length=200)
    condition: str = Field("", max_length=500)
    """The owner's words ("orders yesterday drop below 100"), shown with the rule."""

    @model_validator(mode="after")
    def _threshold_for_comparisons(self) -> AlertRule:
        comparing = self.operator not in ("rows", "no rows")
        if comparing and (self.threshold is None or not math.isfinite(self.threshold)):
            raise ValueError(f"the {self.operator} condition needs a finite number")
        return self

    def describe(self) -> str:
        """The condition as the confirmation and the alert show it."""
        if self.operator == "rows":
            return "the query returns rows"
        if self.operator == "no rows":
            return "the query returns no rows"
        limit = self.threshold
        assert limit is not None
        written = f"{limit:g}" if limit != int(limit) or abs(limit) >= 1e15 else f"{int(limit)}"
        return f"{self.column or 'the value'} {self.operator} {written}"

    def check(self, result: SqlResult) -> AlertCheck:
        """Judge one result (raises ``AlertValueError`` when its value cannot be)."""
        rows = result.total_rows
        if self.operator in ("rows", "no rows"):
            holds = (rows > 0) == (self.operator == "rows")
            return AlertCheck(holds=holds, rows=rows)
        if not result.rows or not result.columns:
            return AlertCheck(holds=False, rows=0)  # nothing to compare: not a change
        value = _number(result.rows[0][self._column_index(result.columns)])
        if value is None:
            return AlertCheck(holds=False, rows=rows)
        assert self.threshold is not None
        return AlertCheck(holds=_COMPARE[self.operator](value, self.threshold), value=value)

    def _column_index(self, columns: list[str]) -> int:
        if self.column is None:
            return 0
        lowered = [name.lower() for name in columns]
        if self.column.lower() not in lowered:
            raise AlertValueError(f"the query has no column {self.column!r}")
        return lowered.index(self.column.lower())


def _number(value: Any) -> float | None:
    """A cell as a number; ``None`` for SQL NULL; ``AlertValueError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float | Decimal):
        number = float(value)
    else:
        try:
            number = float(Decimal(str(value).strip()))
        except (InvalidOperation, ValueError):
            raise AlertValueError(f"{str(value)[:40]!r} is not a number") from None
    if not math.isfinite(number):
        raise AlertValueError(f"{value!r} is not a finite number")
    return number


def fires(previous: bool | None, now: AlertCheck) -> bool:
    """Whether a check posts: the condition holds now and did not at the last check.

    >>> fires(None, AlertCheck(holds=True)), fires(True, AlertCheck(holds=True))
    (True, False)
    >>> fires(False, AlertCheck(holds=True)), fires(True, AlertCheck(holds=False))
    (True, False)
    """
    return now.holds and previous is not True
