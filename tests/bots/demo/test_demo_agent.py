"""The demo agent end to end: the scripted model drives real tools through the agent loop."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TypeVar

from agent_core.agent import Agent
from agent_core.components import (
    ChartComponent,
    DataFrameComponent,
    NotificationComponent,
    RichTextComponent,
    SimpleImageComponent,
    UiComponent,
)
from agent_core.context import ToolContext
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedLlmService, ScriptedResponse
from agent_core.memory.in_memory import InMemoryAgentMemory
from bots.demo.agent import DemoSettings, DemoUserResolver, build_demo_agent, build_demo_registry
from bots.demo.data import DATABASE_NAME
from tests.bots.demo.conftest import ask, slack_context

T = TypeVar("T")

REVENUE_BY_CUSTOMER = """
SELECT c.name, ROUND(SUM(oi.quantity * oi.unit_price), 2) FROM customers c
JOIN orders o ON o.customer_id = c.id JOIN order_items oi ON oi.order_id = o.id
WHERE o.status <> 'cancelled' GROUP BY c.id ORDER BY 2 DESC
"""


def _of_type(components: list[UiComponent], kind: type[T]) -> list[T]:
    return [c.rich_component for c in components if isinstance(c.rich_component, kind)]


def final_text(components: list[UiComponent]) -> str:
    texts = _of_type(components, RichTextComponent)
    finished = [t for t in texts if not t.streaming and t.markdown]
    assert finished, "the turn ended without a finished text answer"
    return finished[-1].content


async def test_top_customers_answer_carries_the_real_numbers(
    agent: Agent, shop: sqlite3.Connection
) -> None:
    components = await ask(agent, "Who are our top 5 customers by revenue?")
    text = final_text(components)
    assert "Scripted demo model" in text and "ANTHROPIC_API_KEY" in text

    expected = shop.execute(REVENUE_BY_CUSTOMER).fetchmany(5)
    assert "**Top 5 customers by revenue**" in text
    for name, revenue in expected:
        assert f"**{name}**" in text
        assert f"${revenue:,.0f}" in text
    assert text.index(expected[0][0]) < text.index(expected[1][0])

    [table] = _of_type(components, DataFrameComponent)
    assert table.columns == ["customer", "country", "revenue", "orders"]
    assert [row["customer"] for row in table.rows] == [name for name, _ in expected]
    [chart] = _of_type(components, ChartComponent)
    assert chart.chart_type == "bar" and chart.title == "Top 5 customers by revenue"
    assert chart.x == [name for name, _ in expected]
    assert chart.image_url and chart.image_url.startswith("data:image/png;base64,")
    [chart_ui] = [c for c in components if c.rich_component is chart]
    assert isinstance(chart_ui.simple_component, SimpleImageComponent)


async def test_answers_stream_as_text_updates(agent: Agent) -> None:
    components = await ask(agent, "Sales by category")
    assert "**Top" not in final_text(components)
    texts = _of_type(components, RichTextComponent)
    streamed = [t for t in texts if t.streaming]
    assert len(streamed) > 5
    assert len({t.id for t in streamed}) == 1
    assert streamed[0].lifecycle.value == "create"
    assert all(t.lifecycle.value == "update" for t in streamed[1:])
    assert "".join(t.delta or "" for t in streamed) == final_text(components)


async def test_monthly_trend_is_a_24_month_line_chart(
    agent: Agent, shop: sqlite3.Connection
) -> None:
    components = await ask(agent, "show me revenue over time by month")
    [chart] = _of_type(components, ChartComponent)
    assert chart.chart_type == "line" and len(chart.x) == 24
    months = [
        m
        for (m,) in shop.execute(
            "SELECT DISTINCT strftime('%Y-%m', order_date) FROM orders ORDER BY 1"
        )
    ]
    assert chart.x == months
    text = final_text(components)
    assert f"**Monthly revenue, {months[0]} to {months[-1]}** (24 months)" in text


async def test_orders_last_month_counts_the_previous_calendar_month(
    agent: Agent, shop: sqlite3.Connection
) -> None:
    components = await ask(agent, "How many orders did we get last month?")
    (orders, month) = shop.execute(
        "SELECT COUNT(*), strftime('%Y-%m', date('now', 'start of month', '-1 month')) "
        "FROM orders WHERE order_date >= date('now', 'start of month', '-1 month') "
        "AND order_date < date('now', 'start of month')"
    ).fetchone()
    assert orders > 0
    assert f"**{orders:,} orders** were placed last month ({month})" in final_text(components)
    assert _of_type(components, ChartComponent) == []
    assert len(_of_type(components, DataFrameComponent)) == 1


async def test_other_questions_get_what_the_demo_can_do(agent: Agent) -> None:
    components = await ask(agent, "What's the weather in Lisbon?")
    text = final_text(components)
    assert "Scripted demo model" in text
    assert "I can't answer that one" in text
    assert "_Who are our top customers by revenue?_" in text
    assert _of_type(components, DataFrameComponent) == []


async def test_help_lists_the_questions(agent: Agent) -> None:
    text = final_text(await ask(agent, "help"))
    assert "Here is what I can answer" in text and "_Revenue by country_" in text


async def test_successful_queries_are_remembered_for_the_workspace(
    agent: Agent, memory: InMemoryAgentMemory
) -> None:
    await ask(agent, "Which customers brought in the most revenue?")
    user = await agent.user_resolver.resolve_user(slack_context())
    context = ToolContext(user=user, conversation_id="x", request_id="y")
    hits = await memory.search_similar_usage("top 5 customers by revenue", context)
    assert {h.memory.tool_name for h in hits} == {"run_sql", "visualize_data"}
    assert all(h.memory.question == "Which customers brought in the most revenue?" for h in hits)


async def test_admins_also_see_tool_arguments_privately(agent: Agent) -> None:
    admin = await ask(agent, "Revenue by country", user_id="UADMIN")
    private = [c for c in admin if c.audience == "requester"]
    assert "tool_arguments" in {c.ui_feature for c in private}
    assert any("SELECT c.country" in c.model_dump_json() for c in private)

    user = await ask(agent, "Revenue by country", user_id="U2", conversation_id="other")
    assert [c for c in user if c.audience == "requester"] == []
    assert len(_of_type(user, DataFrameComponent)) == 1


async def test_admins_see_tool_errors_users_do_not(
    settings: DemoSettings, tmp_path: Path, memory: InMemoryAgentMemory
) -> None:
    """The demo's groups: a refused write shows its error to admins only."""
    build_demo_agent(settings)  # creates the database
    runner = SqlAlchemyRunner.sqlite(tmp_path / DATABASE_NAME)

    def failing_agent() -> Agent:
        llm = ScriptedLlmService(
            [ScriptedResponse.tool("run_sql", {"sql": "DELETE FROM orders"}), "Sorry."]
        )
        return Agent(
            llm_service=llm,
            tool_registry=build_demo_registry(runner, settings),
            user_resolver=DemoUserResolver(settings),
            agent_memory=memory,
        )

    admin = await ask(failing_agent(), "delete all orders", user_id="UADMIN")
    [error] = [c for c in admin if isinstance(c.rich_component, NotificationComponent)]
    assert (error.audience, error.ui_feature) == ("requester", "tool_error")
    assert "read-only" in error.rich_component.message

    user = await ask(failing_agent(), "delete all orders", user_id="U2")
    assert _of_type(user, NotificationComponent) == []
    assert final_text(user) == "Sorry."


async def test_users_without_a_query_group_cannot_run_sql(settings: DemoSettings) -> None:
    locked = build_demo_agent(settings.model_copy(update={"default_groups": ["guest"]}))
    components = await ask(locked, "Revenue by country")
    assert "don't have access to the `run_sql` tool" in final_text(components)
    assert _of_type(components, DataFrameComponent) == []


async def test_empty_message_shows_the_demo_questions(agent: Agent) -> None:
    components = await ask(agent, "")
    dumped = " ".join(c.model_dump_json() for c in components)
    assert "Who are our top customers by revenue?" in dumped
    assert "scripted demo model" in dumped


async def test_ranked_questions_default_to_ten_rows(agent: Agent) -> None:
    components = await ask(agent, "What are our best-selling products?")
    [table] = _of_type(components, DataFrameComponent)
    assert len(table.rows) == 10
    assert "**Top 10 products by units sold:**" in final_text(components)
