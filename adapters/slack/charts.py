"""Charts in Slack: a native ``data_visualization`` block when the chart fits, else a PNG.

``chart_block`` builds the native block (``limits.DataVisualizationBlock`` holds Slack's chart
limits) and returns ``None`` when a chart does not fit them (or is a scatter plot);
``render_chart`` then falls back to the PNG rendering in ``image_url`` (uploaded), an image
URL, or the data as a table.

>>> from agent_core.components import ChartComponent, ChartSeries
>>> chart = ChartComponent(chart_type="bar", title="Sales", x=["Q1", "Q2"],
...                        series=[ChartSeries(name="EU", values=[3, 4])])
>>> chart_block(chart)["chart"]["axis_config"]["categories"]
['Q1', 'Q2']
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ImageBlock

from adapters.slack.limits import (
    AXIS_TITLE_MAX,
    LABEL_MAX,
    TITLE_MAX,
    DataVisualizationBlock,
    FileUpload,
    SlackMessage,
    chart_is_valid,
    pack_messages,
)
from adapters.slack.markdown import truncate
from adapters.slack.tables import render_dataframe, slug
from agent_core.components import ChartComponent, DataFrameComponent
from agent_core.components.images import png_from_data_uri

MAX_IMAGE_URL = 3000
NATIVE_TYPES = {"bar": "bar", "line": "line", "pie": "pie"}


def _label(value: str | float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _labels(chart: ChartComponent) -> list[str] | None:
    """The category labels, cut to Slack's label length when that keeps them apart."""
    full = [_label(x) for x in chart.x]
    short = [truncate(label, LABEL_MAX) for label in full]
    for labels in (full, short):
        if len(set(labels)) == len(labels) and all(len(lb) <= LABEL_MAX for lb in labels):
            return labels
    return None


def _native_chart(chart: ChartComponent) -> dict[str, Any] | None:
    kind = NATIVE_TYPES.get(chart.chart_type)
    labels = _labels(chart)
    if kind is None or not chart.series or labels is None:
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


def _chart_as_table(chart: ChartComponent) -> DataFrameComponent:
    label = chart.x_label or "x"
    records = [
        {label: x, **{s.name: (s.values[i] if i < len(s.values) else None) for s in chart.series}}
        for i, x in enumerate(chart.x)
    ]
    return DataFrameComponent.from_records(records, title=chart.title or "Chart data")


def render_chart(chart: ChartComponent) -> list[SlackMessage]:
    """Native chart when it fits, else the PNG upload, else an image URL, else a table."""
    title = chart.title or "Chart"
    native = chart_block(chart)
    if native is not None:
        return pack_messages([native], text=f"Chart: {title}")
    png = png_from_data_uri(chart.image_url)
    if png is not None:
        upload = FileUpload(
            filename=f"{slug(chart.title, 'chart')}.png", content=png, title=title, alt_text=title
        )
        return [SlackMessage(text="", files=[upload])]  # the file's title is the one title
    url = chart.image_url or ""
    if url.startswith(("https://", "http://")) and len(url) <= MAX_IMAGE_URL:
        image = ImageBlock(
            image_url=url, alt_text=truncate(title, 2000), title=truncate(title, 2000)
        )
        return pack_messages([image.to_dict()], text=f"Chart: {title}")
    return render_dataframe(_chart_as_table(chart))
