"""Shared pieces of the extension tests: a ``run_sql`` test tool and a turn runner."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UiComponent,
    User,
)

USER = User(id="u-ana", username="Ana", group_memberships=["user"])


class SqlArgs(BaseModel):
    sql: str
    api_key: str | None = None


class FakeRunSql(Tool[SqlArgs]):
    """A ``run_sql`` stand-in; with ``barrier`` each call waits until all parties arrived,
    so a turn only completes when its calls really run concurrently."""

    name = "run_sql"
    description = "Run one SQL statement"

    def __init__(self, barrier: asyncio.Barrier | None = None) -> None:
        self.barrier = barrier

    def get_args_schema(self) -> type[SqlArgs]:
        return SqlArgs

    async def execute(self, context: ToolContext, args: SqlArgs) -> ToolResult:
        if self.barrier is not None:
            async with asyncio.timeout(5):
                await self.barrier.wait()
        if args.sql.startswith("BAD"):
            return ToolResult(success=False, result_for_llm="syntax error", error="syntax error")
        return ToolResult(success=True, result_for_llm=f"rows for {args.sql}: " + "x" * 200)


class NoteArgs(BaseModel):
    text: str


class NoteTool(Tool[NoteArgs]):
    name = "note"
    description = "Remember a note"

    def get_args_schema(self) -> type[NoteArgs]:
        return NoteArgs

    async def execute(self, context: ToolContext, args: NoteArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm="noted")


def build_agent(
    llm: ScriptedLlmService, *tools: Tool[Any], user: User = USER, **kwargs: Any
) -> Agent:
    registry = ToolRegistry()
    for tool in tools:
        registry.register_local_tool(tool, [])
    kwargs.setdefault("user_resolver", StaticUserResolver(user))
    return Agent(
        llm_service=llm, tool_registry=registry, agent_memory=InMemoryAgentMemory(), **kwargs
    )


async def run_turn(
    agent: Agent, message: str, *, context: RequestContext | None = None
) -> list[UiComponent]:
    return [c async for c in agent.send_message(context or RequestContext(), message)]


def final_text(components: list[UiComponent]) -> str:
    texts = [c.rich_component for c in components if c.rich_component.type.value == "text"]
    return str(getattr(texts[-1], "content", "")) if texts else ""
