"""``run_sql``: the table for people, compact CSV for the LLM, memory of what worked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_core.components import DataFrameComponent, SimpleTextComponent
from agent_core.context import ToolContext
from agent_core.database import SqlAlchemyRunner
from agent_core.errors import StateUnavailableError
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.tools.sql import RunSqlArgs, RunSqlTool
from agent_core.users import User
from tests.tools.conftest import ContextFactory

BY_REGION = "SELECT region, SUM(revenue) AS revenue FROM sales GROUP BY region ORDER BY 2 DESC"


async def test_result_reaches_people_and_the_llm(
    shop_db: Path, make_context: ContextFactory
) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    result = await tool.execute(make_context("revenue by region"), RunSqlArgs(sql=BY_REGION))

    assert result.success and result.error is None
    assert result.result_for_llm.splitlines() == [
        "Query returned 3 rows.",
        "region,revenue",
        "West,26808",
        "South,26784",
        "North,26760",
    ]
    assert result.ui_component is not None
    table = result.ui_component.rich_component
    assert isinstance(table, DataFrameComponent)
    assert table.columns == ["region", "revenue"]
    assert table.column_types == {"region": "string", "revenue": "number"}
    assert table.rows[0] == {"region": "West", "revenue": 26808.0}
    assert (table.row_count, table.is_truncated) == (3, False)
    simple = result.ui_component.simple_component
    assert isinstance(simple, SimpleTextComponent)
    assert simple.text.splitlines() == [
        "region | revenue",
        "-------+--------",
        "West   |   26808",
        "South  |   26784",
        "North  |   26760",
        "(3 rows)",
    ]
    assert result.metadata["row_count"] == 3 and result.metadata["truncated"] is False


async def test_large_results_say_showing_n_of_m(
    shop_db: Path, make_context: ContextFactory
) -> None:
    """Issue 17: the table's description said "Showing 100 of 400 rows" while the channel
    showed 99 (Slack) or 16 (Teams) of them: how many rows are shown is now said by the
    renderer alone; the description only says what the table cannot (an inexact total)."""
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db), max_rows=25, llm_max_chars=300)
    result = await tool.execute(make_context(), RunSqlArgs(sql="SELECT * FROM sales"))

    first, header, *rows = result.result_for_llm.splitlines()
    assert first == f"Query returned 72 rows. The CSV below lists the first {len(rows)}."
    assert header == "month,region,revenue,share_pct"
    assert rows[0] == "2023-01,North,1000,50"
    assert 5 < len(rows) < 25
    assert len(result.result_for_llm) <= len(first) + 1 + 300
    assert result.ui_component is not None
    table = result.ui_component.rich_component
    assert isinstance(table, DataFrameComponent)
    assert (len(table.rows), table.row_count, table.is_truncated) == (25, 72, True)
    assert table.description is None
    simple = result.ui_component.simple_component
    assert isinstance(simple, SimpleTextComponent)
    assert simple.text.endswith("(showing 25 of 72 rows (20 listed here))")


async def test_successful_queries_are_remembered_against_the_question(
    shop_db: Path, make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    context = make_context("which region brought in the most revenue")
    await tool.execute(context, RunSqlArgs(sql=BY_REGION))

    [hit] = await memory.search_similar_usage("top regions by sales", context)
    assert hit.memory.tool_name == "run_sql"
    assert hit.memory.args == {"sql": BY_REGION}
    assert hit.memory.metadata == {"rows": 3}


async def test_nothing_is_remembered_without_a_question_or_when_disabled(
    shop_db: Path, make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    await tool.execute(make_context(""), RunSqlArgs(sql=BY_REGION))
    quiet = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db), save_to_memory=False)
    context = make_context("revenue by region")
    await quiet.execute(context, RunSqlArgs(sql=BY_REGION))
    assert await memory.get_recent_memories(context) == []


async def test_failed_queries_explain_themselves_and_are_not_remembered(
    shop_db: Path, make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    context = make_context("delete everything")
    refused = await tool.execute(context, RunSqlArgs(sql="DELETE FROM sales"))
    assert refused.success is False
    assert refused.metadata["error_type"] == "sql_read_only"
    assert "read-only" in (refused.error or "")
    assert "SELECT" in refused.result_for_llm

    invalid = await tool.execute(context, RunSqlArgs(sql="SELECT nope FROM sales"))
    assert invalid.metadata["error_type"] == "sql_invalid"
    assert "no such column: nope" in invalid.result_for_llm
    assert "Fix the SQL" in invalid.result_for_llm
    assert await memory.get_recent_memories(context) == []


async def test_statements_without_rows_report_rows_affected(
    shop_db: Path, make_context: ContextFactory
) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db, allow_writes=True))
    result = await tool.execute(make_context(), RunSqlArgs(sql="DELETE FROM files"))
    assert result.success
    assert result.result_for_llm == "Statement ran; 1 row(s) affected."


async def test_empty_results_name_the_columns(shop_db: Path, make_context: ContextFactory) -> None:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    sql = "SELECT region FROM sales WHERE 0"
    result = await tool.execute(make_context(), RunSqlArgs(sql=sql))
    assert result.result_for_llm == "The query returned no rows. Columns: region"


class _UnreachableMemory(InMemoryAgentMemory):
    """A memory whose backing store is down (as a Redis memory would be)."""

    async def save_tool_usage(self, *args: Any, **kwargs: Any) -> None:
        raise StateUnavailableError("redis is down")


async def test_a_broken_memory_never_fails_the_query(shop_db: Path, caplog: Any) -> None:
    context = ToolContext(
        user=User(id="u"),
        conversation_id="c",
        request_id="r",
        agent_memory=_UnreachableMemory(),
        question="revenue by region",
    )
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db))
    result = await tool.execute(context, RunSqlArgs(sql=BY_REGION))
    assert result.success
    assert "could not save run_sql usage" in caplog.text


def test_schema_describes_the_dialect(shop_db: Path) -> None:
    schema = RunSqlTool(SqlAlchemyRunner.sqlite(shop_db), max_rows=50).get_schema()
    assert schema.name == "run_sql"
    assert "SQLite" in schema.description and "first 50 rows" in schema.description
    assert schema.parameters["required"] == ["sql"]
