"""The ``visualize_data`` tool: a query's result as a chart (data + a PNG rendering).

The LLM passes the SQL that produces the data, so the chart is always drawn from real
rows, never from numbers the model retyped. ``plan_chart`` picks the columns and the chart
type; ``chart_render`` draws the PNG for channels without native charts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agent_core.components import (
    ChartComponent,
    ChartSeries,
    ChartType,
    SimpleImageComponent,
    SimpleTextComponent,
    UiComponent,
)
from agent_core.components.images import png_data_uri
from agent_core.context import ToolContext
from agent_core.errors import PermissionDeniedError, ThreadlineError
from agent_core.tool_contract import Tool, ToolResult
from agent_core.tools.chart_render import png_available, render_chart_png
from agent_core.tools.sql import (
    SqlError,
    SqlResult,
    SqlRunner,
    asked_as,
    no_data_access,
    remember_tool_use,
    sql_failure,
    sql_source,
)
from agent_core.tools.tabular import format_number

logger = logging.getLogger(__name__)

_DATE_LIKE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?([ T].*)?$|^\d{4}-?[QW]\d{1,2}$")
_SHARE_WORDS = ("share", "percent", "pct", "proportion", "ratio", "fraction")


class ChartError(ThreadlineError, ValueError):
    """The data cannot make the requested chart; the message tells the LLM what to change."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def numeric_columns(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Columns whose non-null values are all numbers (and that have at least one)."""
    found = []
    for i, name in enumerate(columns):
        values = [row[i] for row in rows if row[i] is not None]
        if values and all(_is_number(v) for v in values):
            found.append(name)
    return found


def _auto_type(
    x_values: list[Any], x_numeric: bool, y: list[str], series_values: list[list[float | None]]
) -> ChartType:
    if x_numeric:
        years = all(isinstance(v, int) and 1900 <= v <= 2100 for v in x_values)
        ascending = x_values == sorted(x_values)
        return "line" if years or ascending else "scatter"
    if x_values and all(_DATE_LIKE.match(str(v)) for v in x_values):
        return "line"
    share = len(y) == 1 and any(word in y[0].lower() for word in _SHARE_WORDS)
    if share and len(x_values) <= 8 and all((v or 0) >= 0 for v in series_values[0]):
        return "pie"
    return "bar"


def _pick_columns(
    columns: list[str], numeric: list[str], x: str | None, y: list[str] | None
) -> tuple[str, list[str]]:
    for name in [x, *(y or [])]:
        if name is not None and name not in columns:
            raise ChartError(f"no column named {name!r}; the result has {', '.join(columns)}")
    x = x or next((c for c in columns if c not in numeric), columns[0])
    y = y or [c for c in numeric if c != x]
    not_numeric = [c for c in y if c not in numeric]
    if not_numeric:
        raise ChartError(f"column(s) {', '.join(not_numeric)} are not numeric")
    if not y:
        raise ChartError(
            "the result has no numeric column to plot besides the labels; select a count or sum"
        )
    return x, y


def plan_chart(
    columns: list[str],
    rows: Sequence[Sequence[Any]],
    *,
    chart_type: ChartType | None = None,
    x: str | None = None,
    y: list[str] | None = None,
    title: str | None = None,
    max_categories: int = 30,
) -> ChartComponent:
    """A chart of ``rows``: x = the first text column (or ``x``), series = the numeric columns
    (or ``y``); the type is ``chart_type`` or chosen from the data (dates or ordered
    numbers -> line, other numbers -> scatter, a share of a few parts -> pie, else bar).

    >>> plan_chart(["month", "revenue"], [("2024-01", 10.0), ("2024-02", 12.5)]).chart_type
    'line'
    """
    if not rows:
        raise ChartError("the query returned no rows, so there is nothing to chart")
    numeric = numeric_columns(columns, rows)
    x_name, y_names = _pick_columns(columns, numeric, x, y)
    index = {name: i for i, name in enumerate(columns)}
    x_numeric = x_name in numeric
    x_values = [row[index[x_name]] for row in rows]
    values = [[_as_float(row[index[name]]) for row in rows] for name in y_names]
    chosen = chart_type or _auto_type(x_values, x_numeric, y_names, values)
    if chosen == "pie":  # one series: the first numeric column
        y_names, values = y_names[:1], values[:1]
        if any((v or 0) < 0 for v in values[0]) or not any(values[0]):
            raise ChartError("a pie chart needs non-negative values that are not all zero")
    if chosen in ("bar", "pie") and len(rows) > max_categories:
        x_values, values = x_values[:max_categories], [v[:max_categories] for v in values]
    keep_numbers = x_numeric and chosen in ("line", "scatter")
    return ChartComponent(
        chart_type=chosen,
        x=[float(v) if keep_numbers else str(v) for v in x_values],
        series=[ChartSeries(name=n, values=v) for n, v in zip(y_names, values, strict=True)],
        title=title or f"{' and '.join(y_names)} by {x_name}",
        x_label=x_name,
        y_label=y_names[0] if len(y_names) == 1 else None,
    )


def _as_float(value: Any) -> float | None:
    return float(value) if _is_number(value) else None


def describe_chart(chart: ChartComponent) -> str:
    """A few lines the LLM can talk about: what was drawn and each series' extremes."""
    points = len(chart.x)
    lines = [f"Created a {chart.chart_type} chart '{chart.title}' with {points} points."]
    if points:
        lines.append(f"{chart.x_label}: from {chart.x[0]} to {chart.x[-1]}.")
    for series in chart.series:
        present = [(v, x) for v, x in zip(series.values, chart.x, strict=True) if v is not None]
        if not present:
            continue
        low, high = min(present, key=lambda p: p[0]), max(present, key=lambda p: p[0])
        total = sum(v for v, _ in present)
        lines.append(
            f"{series.name}: min {format_number(low[0])} ({low[1]}), max "
            f"{format_number(high[0])} ({high[1]}), total {format_number(total)}."
        )
    return "\n".join(lines)


class VisualizeDataArgs(BaseModel):
    sql: str = Field(
        min_length=1,
        description="The SELECT whose result to chart: a label column (or dates) first, "
        "then one or more numeric columns. Order the rows as they should appear.",
    )
    chart_type: ChartType | None = Field(
        default=None, description="bar, line, pie or scatter; omit to choose from the data"
    )
    x: str | None = Field(default=None, description="x axis / label column (default: first)")
    y: list[str] | None = Field(
        default=None, description="numeric column(s) to plot (default: all numeric columns)"
    )
    title: str | None = Field(default=None, description="chart title")

    @field_validator("y", mode="before")
    @classmethod
    def _one_column_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class VisualizeDataTool(Tool[VisualizeDataArgs]):
    """The ``visualize_data`` tool: runs the SQL through the ``SqlRunner`` and charts it.

    The rich component is a ``ChartComponent`` with ``image_url`` set to a PNG data URI; the
    simple component is that image (or a text summary when rendering is unavailable).

    >>> from agent_core.database import SqlAlchemyRunner
    >>> VisualizeDataTool(SqlAlchemyRunner("sqlite:///shop.db")).get_schema().name
    'visualize_data'
    """

    name = "visualize_data"
    description = (
        "Draw a chart (bar, line, pie or scatter) of a SQL query's result and show it to the "
        "user. Pass the SELECT producing the data: a label or date column first, then numeric "
        "columns. Use it when a chart makes the answer clearer (trends, comparisons)."
    )

    def __init__(
        self,
        runner: SqlRunner,
        *,
        max_rows: int = 1000,
        timeout: float = 10.0,
        render_png: bool = True,
        save_to_memory: bool = True,
    ) -> None:
        self.runner = runner
        self.max_rows = max_rows
        self.timeout = timeout
        self.render_png = render_png
        self.save_to_memory = save_to_memory

    def get_args_schema(self) -> type[VisualizeDataArgs]:
        return VisualizeDataArgs

    async def execute(self, context: ToolContext, args: VisualizeDataArgs) -> ToolResult:
        try:
            runner = self.runner.for_user(context.user)
        except PermissionDeniedError as refused:
            return no_data_access(refused)
        try:
            result = await runner.run_sql(args.sql, max_rows=self.max_rows, timeout=self.timeout)
            chart = plan_chart(
                result.columns,
                result.rows,
                chart_type=args.chart_type,
                x=args.x,
                y=args.y,
                title=args.title,
            )
        except SqlError as error:
            return sql_failure(error, asked_as(runner, context))
        except ChartError as error:
            return ToolResult(
                success=False,
                result_for_llm=f"Could not draw the chart: {error}.",
                error=str(error),
                metadata={"error_type": "chart"},
            )
        summary = describe_chart(chart) + _truncation_note(result, chart)
        chart = await self._with_image(chart)
        if self.save_to_memory:
            await remember_tool_use(context, self.name, args.model_dump(exclude_none=True))
        simple = (
            SimpleImageComponent(url=chart.image_url, alt_text=chart.title)
            if chart.image_url
            else SimpleTextComponent(text=summary)
        )
        return ToolResult(
            success=True,
            result_for_llm=summary,
            ui_component=UiComponent(rich_component=chart, simple_component=simple),
            metadata={
                "chart_type": chart.chart_type,
                "points": len(chart.x),
                **asked_as(runner, context),
            },
            sources=[sql_source(self.name, args.sql, result, self.runner.parser_dialect)],
        )

    async def _with_image(self, chart: ChartComponent) -> ChartComponent:
        if not self.render_png or not png_available():  # channels draw their native charts
            return chart
        try:
            png = await asyncio.to_thread(render_chart_png, chart)
        except Exception:  # the chart data still reaches channels with native charts
            logger.warning("could not render %s chart to PNG", chart.chart_type, exc_info=True)
            return chart
        return chart.model_copy(update={"image_url": png_data_uri(png)})


def _truncation_note(result: SqlResult, chart: ChartComponent) -> str:
    notes = []
    if result.truncated:
        notes.append(f"The query had {result.row_note()}; only those were charted.")
    if len(chart.x) < len(result.rows):
        notes.append(f"Only the first {len(chart.x)} categories are drawn.")
    return "".join(f"\n{n}" for n in notes)
