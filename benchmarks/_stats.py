"""Small helpers shared by the benchmarks: percentiles and the result line."""

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


def result_line(name: str, **figures: Any) -> str:
    """The machine-readable last line every benchmark prints."""
    return json.dumps({"benchmark": name, **figures}, sort_keys=True)
