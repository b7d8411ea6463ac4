"""Execution accuracy: does the result the agent got hold the expected result?

Rows are compared as a multiset (order ignored) after normalising each cell: numbers to
two decimals, everything else to text. The agent may return extra columns and name or
order them as it likes: the result passes when some choice of its columns, one per expected
column, gives exactly the expected rows. So "top customers with revenue" passes whether or
not the agent also returned the country.

>>> matches([["Acme", 10.0]], ["name", "country", "revenue"], [["Acme", "DE", 10.004]])
True
>>> matches([[3]], ["n"], [[4]])
False
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

MAX_COMBINATIONS = 5000


def normalise(value: Any) -> Any:
    """A cell as compared: numbers rounded to two decimals, text stripped.

    >>> normalise(2), normalise("2.50"), normalise(" Acme "), normalise(None)
    (2.0, 2.5, 'Acme', None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return round(float(value), 2)
    text = str(value).strip()
    try:
        return round(float(text), 2)
    except ValueError:
        return text


def _column(rows: Sequence[Sequence[Any]], index: int) -> Counter[Any]:
    return Counter(normalise(row[index]) for row in rows)


def matches(
    expected: Sequence[Sequence[Any]], columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> bool:
    """Whether ``rows`` (with ``columns``) hold exactly the ``expected`` rows."""
    if len(expected) != len(rows):
        return False
    if not expected:
        return True
    width = len(expected[0])
    if width > len(columns):
        return False
    wanted = Counter(tuple(normalise(v) for v in row) for row in expected)
    # each expected column may only map onto agent columns with the same values
    candidates = [
        [j for j in range(len(columns)) if _column(rows, j) == _column(expected, i)]
        for i in range(width)
    ]
    if any(not found for found in candidates):
        return False
    for choice in itertools.islice(itertools.product(*candidates), MAX_COMBINATIONS):
        if len(set(choice)) != width:
            continue
        got = Counter(tuple(normalise(row[j]) for j in choice) for row in rows)
        if got == wanted:
            return True
    return False


def as_rows(expected: Any) -> list[list[Any]]:
    """Expected values as rows: a scalar is one cell, a flat list one column.

    >>> as_rows(42), as_rows(["a", "b"]), as_rows([["a", 1]])
    ([[42]], [['a'], ['b']], [['a', 1]])
    """
    if not isinstance(expected, list):
        return [[expected]]
    return [row if isinstance(row, list) else [row] for row in expected]
