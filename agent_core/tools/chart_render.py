"""PNG rendering of a ``ChartComponent`` with matplotlib (headless Agg, imported on use).

For channels without native charts, and only where matplotlib is installed (the
``threadline[charts]`` extra): ``png_available()`` says so, and without it charts reach the
channels as data for their native charts. Uses matplotlib's object API, never ``pyplot``, so no
global figure state is shared; a lock still serialises renders because matplotlib's font and
text caches are not thread-safe. Call it in a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import threading
from typing import Any

from agent_core.components import ChartComponent
from agent_core.tools.tabular import format_number

_render_lock = threading.Lock()


@functools.cache
def png_available() -> bool:
    """Whether matplotlib is installed (``pip install 'threadline[charts]'``)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken or half-removed install
        return False


_MAX_X_TICKS = 12


def _axis_number(value: float, _position: Any = None) -> str:
    magnitude = abs(value)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:.3g}{suffix}"
    return format_number(value)


def _category_ticks(axes: Any, labels: list[str]) -> None:
    step = max(1, -(-len(labels) // _MAX_X_TICKS))
    positions = list(range(0, len(labels), step))
    axes.set_xticks(positions, [labels[i] for i in positions])
    if sum(len(labels[i]) + 2 for i in positions) > 70:  # would overlap at 800 px
        axes.tick_params(axis="x", labelrotation=35)
        for label in axes.get_xticklabels():
            label.set_horizontalalignment("right")


def _draw(axes: Any, chart: ChartComponent) -> None:
    labels = [str(v) for v in chart.x]
    positions = list(range(len(labels)))
    match chart.chart_type:
        case "pie":
            series = chart.series[0]
            axes.pie(
                [v or 0.0 for v in series.values],
                labels=labels,
                autopct="%1.0f%%",
                startangle=90,
                counterclock=False,
            )
            axes.set_aspect("equal")
            return
        case "bar":
            width = 0.8 / len(chart.series)
            for n, series in enumerate(chart.series):
                offset = (n - (len(chart.series) - 1) / 2) * width
                heights = [v if v is not None else 0.0 for v in series.values]
                axes.bar([p + offset for p in positions], heights, width, label=series.name)
            _category_ticks(axes, labels)
        case "line":
            numeric_x = all(isinstance(v, int | float) for v in chart.x)
            xs: list[Any] = list(chart.x) if numeric_x else positions
            for series in chart.series:
                marker = "o" if len(xs) <= 40 else None
                axes.plot(xs, series.values, marker=marker, markersize=3, label=series.name)
            if not numeric_x:
                _category_ticks(axes, labels)
        case "scatter":
            for series in chart.series:
                axes.scatter(chart.x, series.values, s=18, label=series.name)
    axes.grid(axis="y", alpha=0.3)
    axes.spines[["top", "right"]].set_visible(False)


def render_chart_png(
    chart: ChartComponent, *, width: float = 8.0, height: float = 4.5, dpi: int = 100
) -> bytes:
    """The chart as PNG bytes (``width`` x ``height`` inches at ``dpi``: 800x450 by default)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    with _render_lock:
        figure = Figure(figsize=(width, height), dpi=dpi)
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        _draw(axes, chart)
        if chart.chart_type != "pie":
            axes.yaxis.set_major_formatter(FuncFormatter(_axis_number))
            if chart.x_label:
                axes.set_xlabel(chart.x_label)
            if chart.y_label:
                axes.set_ylabel(chart.y_label)
            if len(chart.series) > 1:
                axes.legend(frameon=False)
        figure.tight_layout()  # no title drawn: each channel shows it once, beside the image
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
        return buffer.getvalue()
