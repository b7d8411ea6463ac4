"""``ChartComponent`` -> an Adaptive Card with Teams' own chart, the PNG only as its fallback.

Teams draws charts natively in Adaptive Cards 1.5 (``Chart.VerticalBar``,
``Chart.VerticalBar.Grouped``, ``Chart.Line``, ``Chart.Pie``), and a client that cannot
shows the element's ``fallback``: the PNG rendering in ``image_url`` when there is one (a
data URI is shrunk to fit, see ``shrink_png_data_uri``), else a FactSet summary of each
series. A chart Teams cannot draw natively (a scatter plot, too many points) shows the image
and the summary, as before. The card's title is said once, above the chart.

>>> from agent_core.components import ChartComponent, ChartSeries
>>> chart = ChartComponent(chart_type="bar", x=["a", "b"], title="Sales",
...                        series=[ChartSeries(name="2024", values=[1, 3])])
>>> native = render_chart(chart)["body"][1]
>>> native["type"], native["data"][1], native["fallback"]["type"]
('Chart.VerticalBar', {'x': 'b', 'y': 3.0}, 'FactSet')
"""

from __future__ import annotations

import io
from typing import Any

from adapters.teams import elements
from adapters.teams.tables import format_cell
from agent_core.components import ChartComponent, ChartSeries
from agent_core.components.images import png_data_uri, png_from_data_uri

IMAGE_LIMIT = 250_000
"""Characters of data URI an inline chart may take; larger ones are shrunk or left out."""
SERIES_CAP = 8
POINTS_CAP = 60
"""Categories a native chart takes; more are shown as the image and the summary."""


def _summary(chart: ChartComponent, series: ChartSeries) -> str:
    points = [(x, v) for x, v in zip(chart.x, series.values, strict=False) if v is not None]
    values = [v for v in series.values if v is not None]
    if not values:
        return "no values"
    if not points:
        return f"min {format_cell(min(values))} · max {format_cell(max(values))}"
    low = min(points, key=lambda p: p[1])
    high = max(points, key=lambda p: p[1])
    parts = [
        f"min {format_cell(low[1])} ({format_cell(low[0])})",
        f"max {format_cell(high[1])} ({format_cell(high[0])})",
    ]
    if chart.chart_type in ("bar", "pie"):
        parts.insert(0, f"total {format_cell(sum(values))}")
    elif chart.chart_type == "line" and len(points) > 1:
        parts.insert(0, f"{format_cell(points[0][1])} → {format_cell(points[-1][1])}")
    return " · ".join(parts)


def _facts(chart: ChartComponent) -> elements.Element | None:
    facts = [(s.name, _summary(chart, s)) for s in chart.series[:SERIES_CAP]]
    return elements.fact_set(facts) if facts else None


def shrink_png_data_uri(uri: str, limit: int = IMAGE_LIMIT) -> str | None:
    """A smaller PNG data URI under ``limit`` characters, or None when it cannot be made so."""
    if len(uri) <= limit:
        return uri
    png = png_from_data_uri(uri)
    if png is None:
        return None
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with the [charts] and [teams] extras
        return None
    try:
        picture = Image.open(io.BytesIO(png))
        picture.load()
    except (OSError, ValueError):
        return None
    for scale in (1.0, 0.75, 0.5, 0.35):
        size = (max(1, int(picture.width * scale)), max(1, int(picture.height * scale)))
        resized = picture.convert("RGB").resize(size) if scale < 1 else picture.convert("RGB")
        buffer = io.BytesIO()
        resized.quantize(colors=64).save(buffer, format="PNG", optimize=True)
        candidate = png_data_uri(buffer.getvalue())
        if len(candidate) <= limit:
            return candidate
    return None


def _points(chart: ChartComponent, series: ChartSeries) -> list[dict[str, Any]]:
    return [
        {"x": str(x), "y": float(v)}
        for x, v in zip(chart.x, series.values, strict=False)
        if v is not None
    ]


def native_chart(chart: ChartComponent) -> elements.Element | None:
    """Teams' chart element for ``chart`` (no fallback yet), or None when it has none."""
    series = [s for s in chart.series if any(v is not None for v in s.values)]
    if not series or len(chart.x) > POINTS_CAP or len(series) > SERIES_CAP:
        return None
    axes = {k: v for k, v in (("xAxisTitle", chart.x_label), ("yAxisTitle", chart.y_label)) if v}
    match chart.chart_type:
        case "bar" if len(series) == 1:
            return {"type": "Chart.VerticalBar", "data": _points(chart, series[0]), **axes}
        case "bar":
            data = [{"legend": s.name, "values": _points(chart, s)} for s in series]
            return {"type": "Chart.VerticalBar.Grouped", "data": data, **axes}
        case "line":
            data = [{"legend": s.name, "values": _points(chart, s)} for s in series]
            return {"type": "Chart.Line", "data": data, **axes}
        case "pie" if len(series) == 1 and all((v or 0) >= 0 for v in series[0].values):
            slices: list[dict[str, Any]] = [
                {"legend": str(x), "value": float(v)}
                for x, v in zip(chart.x, series[0].values, strict=False)
                if v
            ]
            return {"type": "Chart.Pie", "data": slices} if slices else None
    return None


def _image(chart: ChartComponent, title: str, notes: list[str]) -> elements.Element | None:
    url = chart.image_url
    if url and url.startswith("data:"):
        url = shrink_png_data_uri(url, IMAGE_LIMIT)
        if url is None:
            notes.append("The chart image was too large to show here.")
    return elements.image(url, alt_text=f"{title} ({chart.chart_type} chart)") if url else None


def render_chart(chart: ChartComponent) -> elements.Element:
    """The chart card: the title once, then Teams' chart (falling back to the image, else
    the summary), or the image and the summary when Teams has no such chart."""
    title = chart.title or f"{chart.chart_type.title()} chart"
    body: list[elements.Element] = [elements.plain_block(title, weight="Bolder", size="Medium")]
    notes: list[str] = []
    image = _image(chart, title, notes)
    facts = _facts(chart)
    native = native_chart(chart)
    if native is not None:
        fallback = image or facts
        body.append({**native, "fallback": fallback} if fallback else native)
        return elements.card(body, fallback_text=title, full_width=True)
    if image is not None:
        body.append(image)
    elif chart.image_url is None:
        notes.append("No chart image was rendered; the figures are summarised below.")
    if facts is not None:
        body.append(facts)
    hidden = len(chart.series) - SERIES_CAP
    if hidden > 0:
        notes.append(f"{hidden} more series not summarised.")
    axis = " / ".join(label for label in (chart.x_label, chart.y_label) if label)
    if axis:
        notes.insert(0, axis)
    if notes:
        body.append(elements.plain_block(" ".join(notes), subtle=True, size="Small"))
    return elements.card(body, fallback_text=title, full_width=True)
