"""``visualize_data``: real rows -> chart data + a small PNG for channels without charts."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

from agent_core.components import ChartComponent, SimpleImageComponent, SimpleTextComponent
from agent_core.database import SqlAlchemyRunner
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.tools.visualize import (
    ChartError,
    VisualizeDataArgs,
    VisualizeDataTool,
    plan_chart,
)
from tests.tools.conftest import ContextFactory

MONTHLY = "SELECT month, SUM(revenue) AS revenue FROM sales GROUP BY month ORDER BY month"


def _png_size(data_uri: str) -> tuple[int, int]:
    prefix = "data:image/png;base64,"
    assert data_uri.startswith(prefix)
    png = base64.b64decode(data_uri[len(prefix) :])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def test_monthly_revenue_becomes_a_line_chart_with_a_png(
    shop_db: Path, make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    tool = VisualizeDataTool(SqlAlchemyRunner.sqlite(shop_db))
    context = make_context("monthly revenue trend")
    result = await tool.execute(context, VisualizeDataArgs(sql=MONTHLY))

    assert result.success, result.result_for_llm
    assert result.ui_component is not None
    chart = result.ui_component.rich_component
    assert isinstance(chart, ChartComponent)
    assert chart.chart_type == "line"
    assert chart.x[:2] == ["2023-01", "2023-02"] and len(chart.x) == 24
    assert [s.name for s in chart.series] == ["revenue"]
    assert chart.series[0].values[:2] == [3003.0, 3033.0]
    assert chart.title == "revenue by month"
    assert chart.image_url is not None
    assert _png_size(chart.image_url) == (800, 450)
    assert len(chart.image_url) < 150_000
    simple = result.ui_component.simple_component
    assert isinstance(simple, SimpleImageComponent) and simple.url == chart.image_url

    assert result.result_for_llm.splitlines() == [
        "Created a line chart 'revenue by month' with 24 points.",
        "month: from 2023-01 to 2024-12.",
        "revenue: min 3003 (2023-01), max 3693 (2024-12), total 80352.",
    ]
    [saved] = await memory.get_recent_memories(context)
    assert (saved.tool_name, saved.args) == ("visualize_data", {"sql": MONTHLY})


async def test_requested_type_columns_and_title_are_honoured(
    shop_db: Path, make_context: ContextFactory
) -> None:
    sql = "SELECT region, share_pct, SUM(revenue) AS revenue FROM sales GROUP BY region"
    args = VisualizeDataArgs.model_validate(
        {"sql": sql, "chart_type": "pie", "y": "share_pct", "title": "Share by region"}
    )
    result = await VisualizeDataTool(SqlAlchemyRunner.sqlite(shop_db)).execute(make_context(), args)
    assert result.ui_component is not None
    chart = result.ui_component.rich_component
    assert isinstance(chart, ChartComponent)
    assert (chart.chart_type, chart.title, chart.x) == (
        "pie",
        "Share by region",
        ["North", "South", "West"],
    )
    assert [s.name for s in chart.series] == ["share_pct"]


async def test_without_png_rendering_the_simple_form_is_a_summary(
    shop_db: Path, make_context: ContextFactory
) -> None:
    tool = VisualizeDataTool(SqlAlchemyRunner.sqlite(shop_db), render_png=False)
    result = await tool.execute(make_context(), VisualizeDataArgs(sql=MONTHLY))
    assert result.ui_component is not None
    chart = result.ui_component.rich_component
    assert isinstance(chart, ChartComponent) and chart.image_url is None
    simple = result.ui_component.simple_component
    assert isinstance(simple, SimpleTextComponent)
    assert simple.text.startswith("Created a line chart")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT region FROM sales", "no numeric column"),
        ("SELECT region, revenue FROM sales WHERE 0", "no rows"),
        ("SELECT region, revenue FROM sales", "no column named 'nope'"),
    ],
)
async def test_data_that_cannot_be_charted_is_explained(
    shop_db: Path, make_context: ContextFactory, sql: str, message: str
) -> None:
    args = VisualizeDataArgs(sql=sql, x="nope" if "nope" in message else None)
    result = await VisualizeDataTool(SqlAlchemyRunner.sqlite(shop_db)).execute(make_context(), args)
    assert result.success is False
    assert result.metadata["error_type"] == "chart"
    assert message in result.result_for_llm


async def test_sql_errors_come_back_as_sql_failures(
    shop_db: Path, make_context: ContextFactory
) -> None:
    result = await VisualizeDataTool(SqlAlchemyRunner.sqlite(shop_db)).execute(
        make_context(), VisualizeDataArgs(sql="DROP TABLE sales")
    )
    assert result.success is False and result.metadata["error_type"] == "sql_read_only"


def test_chart_type_follows_the_data() -> None:
    def kind(columns: list[str], rows: list[tuple[object, ...]]) -> str:
        return plan_chart(columns, rows).chart_type

    assert kind(["month", "n"], [("2024-01", 1), ("2024-02", 2)]) == "line"
    assert kind(["day", "n"], [("2024-01-01", 1), ("2024-01-02", 2)]) == "line"
    assert kind(["year", "n"], [(2023, 1), (2024, 2)]) == "line"
    assert kind(["category", "n"], [("Books", 1), ("Toys", 2)]) == "bar"
    assert kind(["category", "share_pct"], [("Books", 60.0), ("Toys", 40.0)]) == "pie"
    assert kind(["price", "qty"], [(9.5, 3), (2.0, 8), (5.0, 1)]) == "scatter"


def test_multiple_numeric_columns_become_series_and_bars_are_capped() -> None:
    rows = [(f"c{i}", i, i * 2.0) for i in range(40)]
    chart = plan_chart(["name", "a", "b"], rows)
    assert chart.chart_type == "bar"
    assert [s.name for s in chart.series] == ["a", "b"]
    assert len(chart.x) == 30 and chart.y_label is None


def test_pie_refuses_negative_values() -> None:
    with pytest.raises(ChartError, match="non-negative"):
        plan_chart(["k", "v"], [("a", -1.0), ("b", 2.0)], chart_type="pie")


def test_non_numeric_y_is_refused() -> None:
    with pytest.raises(ChartError, match="not numeric"):
        plan_chart(["k", "v"], [("a", 1.0)], y=["k"])


@pytest.mark.parametrize("chart_type", ["bar", "line", "pie", "scatter"])
def test_every_chart_type_renders(chart_type: str) -> None:
    from agent_core.components.images import png_data_uri
    from agent_core.tools.chart_render import render_chart_png

    chart = plan_chart(
        ["x", "v", "w"],
        [(1.0, 3.0, 1.0), (2.0, 5.0, None), (3.0, 4.0, 2.0)],
        chart_type=chart_type,  # type: ignore[arg-type]
    )
    assert _png_size(png_data_uri(render_chart_png(chart))) == (800, 450)
