"""Small real agents for the Teams tests: ScriptedLlmService + a SQL-like tool + a chart tool."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

from pydantic import BaseModel

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    LifecycleHook,
    ScriptedLlmService,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UserResolver,
)
from agent_core.components import ChartComponent, ChartSeries, DataFrameComponent, UiComponent
from agent_core.feedback import Feedback
from agent_core.llm.scripted import ScriptEntry
from agent_core.users import User
from tests.agent_kind import agent_class


def png_uri() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (120, 80), "steelblue").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


class SqlArgs(BaseModel):
    sql: str
    rows: int = 3


class RunSql(Tool[SqlArgs]):
    """Returns ``rows`` made-up customer rows as a table."""

    name = "run_sql"
    description = "Run a read-only SQL query"

    def get_args_schema(self) -> type[SqlArgs]:
        return SqlArgs

    async def execute(self, context: ToolContext, args: SqlArgs) -> ToolResult:
        records = [{"id": i, "name": f"customer {i}", "spend": i * 10.5} for i in range(args.rows)]
        table = DataFrameComponent.from_records(records, title="Query result")
        return ToolResult(
            success=True,
            result_for_llm=f"{args.rows} rows",
            ui_component=UiComponent(rich_component=table),
        )


class ChartArgs(BaseModel):
    kind: str = "bar"


class DrawChart(Tool[ChartArgs]):
    """Returns a small bar chart with a PNG rendering."""

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
            image_url=png_uri(),
        )
        return ToolResult(
            success=True,
            result_for_llm="chart drawn",
            ui_component=UiComponent(rich_component=chart),
        )


class FeedbackLog(LifecycleHook):
    """Keeps the feedback the agent records (the agent calls ``on_feedback``)."""

    def __init__(self) -> None:
        self.entries: list[tuple[User, Feedback]] = []

    async def on_feedback(self, user: User, feedback: Feedback) -> None:
        self.entries.append((user, feedback))


def build_agent(
    script: Sequence[ScriptEntry],
    resolver: UserResolver,
    *,
    latency: float = 0.0,
    hooks: Sequence[LifecycleHook] = (),
) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(RunSql(), access_groups=["user", "admin"])
    registry.register_local_tool(DrawChart(), access_groups=["user", "admin"])
    return agent_class()(
        llm_service=ScriptedLlmService(script, latency=latency),
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=InMemoryAgentMemory(),
        lifecycle_hooks=hooks,
    )
