"""Small real agents for the Slack tests: ScriptedLlmService + a SQL-like tool + a chart tool."""

from __future__ import annotations

import base64
from collections.abc import Sequence

from pydantic import BaseModel

from agent_core import (
    Agent,
    AgentMemory,
    ConversationStore,
    InMemoryAgentMemory,
    ScriptedLlmService,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UserResolver,
)
from agent_core.components import ChartComponent, ChartSeries, DataFrameComponent, UiComponent
from agent_core.llm.scripted import ScriptEntry
from tests.agent_kind import agent_class

PNG_URI = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nchart").decode()


class SqlArgs(BaseModel):
    sql: str
    rows: int = 3


class RunSql(Tool[SqlArgs]):
    """Returns ``rows`` made-up rows as a table."""

    name = "run_sql"
    description = "Run a read-only SQL query"

    def get_args_schema(self) -> type[SqlArgs]:
        return SqlArgs

    async def execute(self, context: ToolContext, args: SqlArgs) -> ToolResult:
        records = [{"id": i, "name": f"row {i}"} for i in range(args.rows)]
        table = DataFrameComponent.from_records(records, title="Query result")
        return ToolResult(
            success=True,
            result_for_llm=f"{args.rows} rows",
            ui_component=UiComponent(rich_component=table),
        )


class ChartArgs(BaseModel):
    kind: str = "bar"


class DrawChart(Tool[ChartArgs]):
    """Returns a small chart (native in Slack for bar; PNG for scatter)."""

    name = "draw_chart"
    description = "Draw a chart"

    def get_args_schema(self) -> type[ChartArgs]:
        return ChartArgs

    async def execute(self, context: ToolContext, args: ChartArgs) -> ToolResult:
        chart = ChartComponent(
            chart_type=args.kind,  # type: ignore[arg-type]
            title="Signups",
            x=["Mon", "Tue", "Wed"],
            series=[ChartSeries(name="signups", values=[3, 5, 4])],
            image_url=PNG_URI,
        )
        return ToolResult(
            success=True,
            result_for_llm="chart drawn",
            ui_component=UiComponent(rich_component=chart),
        )


def build_agent(
    script: Sequence[ScriptEntry],
    resolver: UserResolver,
    *,
    latency: float = 0.0,
    then: ScriptEntry | None = None,
    memory: AgentMemory | None = None,
    conversations: ConversationStore | None = None,
) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(RunSql(), access_groups=["user"])
    registry.register_local_tool(DrawChart(), access_groups=["user"])
    return agent_class()(
        llm_service=ScriptedLlmService(script, latency=latency, then=then),
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=memory or InMemoryAgentMemory(),
        conversation_store=conversations,
    )
