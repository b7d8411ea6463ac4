"""Alert rules: judged on the query's first row without the model; posted on transitions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from agent_core.schedules.alerts import AlertCheck, AlertRule, AlertValueError, fires
from agent_core.tools.sql import SqlResult


def result(rows: list[list[Any]], columns: tuple[str, ...] = ("orders",)) -> SqlResult:
    return SqlResult(columns=list(columns), rows=rows, total_rows=len(rows))


BELOW_100 = AlertRule(sql="SELECT 1", operator="<", threshold=100, column="orders")


@pytest.mark.parametrize(
    ("value", "holds"),
    [(87, True), (100, False), (Decimal("99.5"), True), ("42", True), (" 150 ", False)],
)
def test_a_number_is_compared(value: object, holds: bool) -> None:
    check = BELOW_100.check(result([[value]]))
    assert check.holds is holds and check.value == float(str(value).strip())


def test_the_named_column_is_found_whatever_its_case() -> None:
    rule = AlertRule(sql="SELECT 1", operator=">=", threshold=3, column="Late")
    check = rule.check(result([["x", 5]], ("day", "late")))
    assert check.holds and check.value == 5
    with pytest.raises(AlertValueError, match="no column 'missing'"):
        AlertRule(sql="SELECT 1", operator=">", threshold=0, column="missing").check(result([[1]]))


def test_no_row_or_null_is_not_a_change() -> None:
    assert BELOW_100.check(result([])).holds is False
    assert BELOW_100.check(result([[None]])).holds is False


def test_a_value_that_is_not_a_number_is_an_error() -> None:
    for value in ("n/a", float("nan"), "inf"):
        with pytest.raises(AlertValueError):
            BELOW_100.check(result([[value]]))


def test_rows_and_no_rows() -> None:
    any_rows = AlertRule(sql="SELECT 1", operator="rows")
    none = AlertRule(sql="SELECT 1", operator="no rows")
    assert any_rows.check(result([[1], [2]])) == AlertCheck(holds=True, rows=2)
    assert not any_rows.check(result([])).holds
    assert none.check(result([])).holds and not none.check(result([[1]])).holds
    assert any_rows.describe() == "the query returns rows"


def test_a_comparison_needs_a_finite_threshold() -> None:
    with pytest.raises(ValidationError, match="needs a finite number"):
        AlertRule(sql="SELECT 1", operator="<")
    with pytest.raises(ValidationError, match="needs a finite number"):
        AlertRule(sql="SELECT 1", operator="<", threshold=float("inf"))
    assert AlertRule(sql="SELECT 1", operator=">", threshold=2.5).describe() == "the value > 2.5"


def test_only_a_transition_to_true_fires() -> None:
    checks = [False, True, True, False, False, True, True]
    posted, previous = [], None
    for holds in checks:
        posted.append(fires(previous, AlertCheck(holds=holds)))
        previous = holds
    assert posted == [False, True, False, False, False, True, False]
    assert fires(None, AlertCheck(holds=True))  # true at the first check: the owner hears
