"""Native Slack charts: the ``data_visualization`` block, built from a ``ChartComponent``.

slack_sdk 3.47 has no model for this block yet, so ``DataVisualizationBlock`` is one, in the
same style (a ``Block`` whose ``to_dict`` raises ``SlackObjectFormationError`` on a broken
chart). Slack's limits: title <= 50 chars; pie 1-6 positive segments; bar/line/area 1-6
uniquely named series over 1-20 shared categories with one finite value per category;
labels <= 20 chars; axis titles <= 50 chars. ``chart_block`` returns ``None`` when a chart
does not fit them (or is a scatter plot), so the renderer can fall back to the PNG.

>>> from agent_core.components import ChartComponent, ChartSeries
>>> chart = ChartComponent(chart_type="bar", title="Sales", x=["Q1", "Q2"],
...                        series=[ChartSeries(name="EU", values=[3, 4])])
>>> chart_block(chart)["chart"]["axis_config"]["categories"]
['Q1', 'Q2']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from slack_sdk.models.basic_objects import JsonValidator
from slack_sdk.models.blocks import Block

from adapters.slack.markdown import truncate
from agent_core.components import ChartComponent

TITLE_MAX = 50
LABEL_MAX = 20
AXIS_TITLE_MAX = 50
SERIES_MAX = 6
SEGMENTS_MAX = 6
CATEGORIES_MAX = 20
NATIVE_TYPES = {"bar": "bar", "line": "line", "pie": "pie"}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _points_ok(points: Any, labels: Sequence[str] | None) -> bool:
    if not isinstance(points, list) or not points:
        return False
    seen = [p.get("label") for p in points if isinstance(p, dict)]
    if len(seen) != len(points) or any(not isinstance(s, str) or len(s) > LABEL_MAX for s in seen):
        return False
    if labels is not None and seen != list(labels):
        return False
    return all(_finite(p.get("value")) for p in points)


def _series_chart_ok(chart: dict[str, Any]) -> bool:
    axis = chart.get("axis_config") or {}
    categories = axis.get("categories")
    series = chart.get("series")
    if not isinstance(categories, list) or not 1 <= len(categories) <= CATEGORIES_MAX:
        return False
    if not isinstance(series, list) or not 1 <= len(series) <= SERIES_MAX:
        return False
    names = [s.get("name") for s in series]
    if len(set(names)) != len(names) or any(not n or len(n) > LABEL_MAX for n in names):
        return False
    titles_ok = all(len(axis.get(k) or "") <= AXIS_TITLE_MAX for k in ("x_label", "y_label"))
    return titles_ok and all(_points_ok(s.get("data"), categories) for s in series)


def chart_is_valid(chart: Any) -> bool:
    """True when ``chart`` is a ``pie``/``bar``/``line``/``area`` payload within Slack's limits."""
    if not isinstance(chart, dict):
        return False
    kind = chart.get("type")
    if kind == "pie":
        segments = chart.get("segments")
        return (
            isinstance(segments, list)
            and 1 <= len(segments) <= SEGMENTS_MAX
            and _points_ok(segments, None)
            and all(s["value"] > 0 for s in segments)
        )
    return kind in {"bar", "line", "area"} and _series_chart_ok(chart)


class DataVisualizationBlock(Block):
    """A native chart block; ``to_dict`` validates it like slack_sdk's own blocks.

    >>> DataVisualizationBlock(title="Share", chart={"type": "pie", "segments": [
    ...     {"label": "a", "value": 1}]}).to_dict()["type"]
    'data_visualization'
    """

    type = "data_visualization"
    attributes = {"block_id", "type", "title", "chart"}  # noqa: RUF012 (slack_sdk's shape)

    def __init__(self, *, title: str, chart: dict[str, Any], block_id: str | None = None) -> None:
        super().__init__(type=self.type, block_id=block_id)
        self.title = title
        self.chart = chart

    @JsonValidator(f"title attribute must be 1..{TITLE_MAX} characters")
    def _validate_title(self) -> bool:
        return 1 <= len(self.title) <= TITLE_MAX

    @JsonValidator("chart must be a pie/bar/line/area chart within Slack's limits")
    def _validate_chart(self) -> bool:
        return chart_is_valid(self.chart)


def _label(value: str | float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _native_chart(chart: ChartComponent) -> dict[str, Any] | None:
    kind = NATIVE_TYPES.get(chart.chart_type)
    labels = [_label(x) for x in chart.x]
    if kind is None or not chart.series or len(set(labels)) != len(labels):
        return None
    if kind == "pie":
        if len(chart.series) != 1:
            return None
        values = chart.series[0].values
        return {
            "type": "pie",
            "segments": [{"label": lb, "value": v} for lb, v in zip(labels, values, strict=False)],
        }
    axis: dict[str, Any] = {"categories": labels}
    if chart.x_label:
        axis["x_label"] = truncate(chart.x_label, AXIS_TITLE_MAX)
    if chart.y_label:
        axis["y_label"] = truncate(chart.y_label, AXIS_TITLE_MAX)
    series = [
        {
            "name": s.name,
            "data": [{"label": lb, "value": v} for lb, v in zip(labels, s.values, strict=False)],
        }
        for s in chart.series
    ]
    return {"type": kind, "series": series, "axis_config": axis}


def chart_block(chart: ChartComponent) -> dict[str, Any] | None:
    """The ``data_visualization`` block for ``chart``, or ``None`` when it does not fit."""
    if any(len(s.values) != len(chart.x) for s in chart.series):
        return None
    native = _native_chart(chart)
    if native is None or not chart_is_valid(native):
        return None
    title = truncate(chart.title or chart.y_label or "Chart", TITLE_MAX)
    return DataVisualizationBlock(title=title, chart=native).to_dict()
