"""Small helpers shared by the benchmarks: percentiles, goals with their verdicts, and the
result line."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any


def summary_us(samples_ns: Sequence[int]) -> dict[str, float]:
    """mean / p50 / p99 of nanosecond samples, in microseconds."""
    ordered = sorted(samples_ns)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "mean_us": round(statistics.fmean(ordered) / 1000, 1),
        "p50_us": round(statistics.median(ordered) / 1000, 1),
        "p99_us": round(p99 / 1000, 1),
    }


class Goals:
    """The goals a benchmark checks in its run: each figure beside its goal and "met" /
    "NOT met", and all of them for the result line (``as_json``)."""

    def __init__(self) -> None:
        self._checked: dict[str, dict[str, Any]] = {}

    def check(self, name: str, value: float | None, op: str, limit: float, unit: str = "") -> str:
        """Record ``value`` against ``op`` (``"<="`` or ``">="``) ``limit``; the text to
        print beside the figure. A figure the run could not take (``None``) is not met."""
        if op not in ("<=", ">="):
            raise ValueError(f"unknown comparison {op!r}")
        met = value is not None and (value <= limit if op == "<=" else value >= limit)
        verdict = "met" if met else "NOT met"
        self._checked[name] = {
            "value": value if value is None else round(value, 3),
            "goal": f"{op} {limit:g}{unit}",
            "verdict": verdict,
        }
        return f"(goal {op} {limit:g}{unit}: {verdict})"

    @property
    def all_met(self) -> bool:
        return all(goal["verdict"] == "met" for goal in self._checked.values())

    def as_json(self) -> dict[str, dict[str, Any]]:
        return dict(self._checked)


def result_line(name: str, checked: Goals | None = None, /, **figures: Any) -> str:
    """The machine-readable last line every benchmark prints; with ``checked``, each goal
    (``verdicts``: its value, goal and verdict) and whether all were met."""
    if checked is not None:
        figures |= {"verdicts": checked.as_json(), "all_goals_met": checked.all_met}
    return json.dumps({"benchmark": name, **figures}, sort_keys=True)
