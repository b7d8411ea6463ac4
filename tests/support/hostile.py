"""Hypothesis strategies for hostile input: arbitrary JSON, and real payloads mutated.

``mutated(payload)`` takes a real payload and, at one path chosen at random, deletes the key,
replaces the value with arbitrary JSON, or wraps it in a list; a few mutations per example.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Any JSON value, small."""


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(payload: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "wrap":
        parent[last] = [parent[last]]
    else:
        parent[last] = value
    return payload


@st.composite
def mutated(draw: st.DrawFn, payload: dict[str, Any], *, most: int = 3) -> dict[str, Any]:
    """``payload`` with one to ``most`` of its values deleted, replaced or wrapped."""
    result = copy.deepcopy(payload)
    for _ in range(draw(st.integers(1, most))):
        paths = _paths(result)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["delete", "replace", "replace", "wrap"]))
        result = _mutate(result, path, how, draw(JSON))
    return result


def nested(depth: int) -> str:
    """JSON nested ``depth`` levels deep (lists and objects alternating)."""
    return '{"a":[' * depth + "1" + "]}" * depth
