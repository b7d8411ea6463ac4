"""``ChartComponent`` -> an Adaptive Card with the chart's image and a FactSet summary.

Teams has no native charts, so the card shows the rendering in ``image_url`` (a PNG data URI
or a hosted URL). A data URI larger than ``IMAGE_LIMIT`` is re-encoded smaller (palette PNG,
then downscaled) when Pillow is available; if it still does not fit, the card keeps the
summary and says the image was left out. The FactSet summarises each series either way, so
the numbers survive clients that do not load images.

>>> from agent_core.components import ChartComponent, ChartSeries
>>> chart = ChartComponent(chart_type="bar", x=["a", "b"], title="Sales",
...                        series=[ChartSeries(name="2024", values=[1, 3])])
>>> render_chart(chart)["body"][1]["facts"][0]
{'title': '2024', 'value': 'total 4 · min 1 (a) · max 3 (b)'}
"""

from __future__ import annotations

import io

from adapters.teams import elements
from adapters.teams.tables import format_cell
from agent_core.components import ChartComponent, ChartSeries
from agent_core.components.images import png_data_uri, png_from_data_uri

IMAGE_LIMIT = 250_000
"""Characters of data URI an inline chart may take; larger ones are shrunk or left out."""
SERIES_CAP = 8


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


def shrink_png_data_uri(uri: str, limit: int = IMAGE_LIMIT) -> str | None:
    """A smaller PNG data URI under ``limit`` characters, or None when it cannot be made so."""
    if len(uri) <= limit:
        return uri
    png = png_from_data_uri(uri)
    if png is None:
        return None
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow ships with matplotlib
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


def render_chart(chart: ChartComponent, *, image_limit: int = IMAGE_LIMIT) -> elements.Element:
    """The chart card: title, image (when one fits), per-series summary, notes."""
    title = chart.title or f"{chart.chart_type.title()} chart"
    body: list[elements.Element] = [elements.text_block(title, weight="Bolder", size="Medium")]
    notes: list[str] = []
    url = chart.image_url
    if url and url.startswith("data:"):
        url = shrink_png_data_uri(url, image_limit)
        if url is None:
            notes.append("The chart image was too large to show here.")
    elif not url:
        notes.append("No chart image was rendered; the figures are summarised below.")
    if url:
        body.append(elements.image(url, alt_text=f"{title} ({chart.chart_type} chart)"))
    facts = [(s.name, _summary(chart, s)) for s in chart.series[:SERIES_CAP]]
    if facts:
        body.append(elements.fact_set(facts))
    hidden = len(chart.series) - SERIES_CAP
    if hidden > 0:
        notes.append(f"{hidden} more series not summarised.")
    axis = " / ".join(label for label in (chart.x_label, chart.y_label) if label)
    if axis:
        notes.insert(0, axis)
    if notes:
        body.append(elements.text_block(" ".join(notes), subtle=True, size="Small"))
    return elements.card(body, fallback_text=title, full_width=True)
