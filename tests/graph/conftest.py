"""Helpers for the GraphAgent tests: users, two small tools (one needs approval), builders."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("langgraph")

from langgraph.checkpoint.memory import InMemorySaver

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    MemoryConversationStore,
    Message,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UiComponent,
    User,
    UserResolver,
)
from agent_core.graph import GraphAgent

ANA = User(id="u-ana", username="Ana", group_memberships=["user"])
BOB = User(id="u-bob", username="Bob", group_memberships=["user"])
ADMIN = User(id="u-admin", username="Ada", group_memberships=["admin", "user"])


class TableArgs(BaseModel):
    table: str


class DropTable(Tool[TableArgs]):
    """A destructive tool: the turn must pause for the asker's approval before it runs."""

    name = "drop_table"
    description = "Drop a table"
    requires_approval = True

    def __init__(self) -> None:
        self.executions: list[str] = []
        self.started = asyncio.Event()
        self.release: asyncio.Event | None = None

    def get_args_schema(self) -> type[TableArgs]:
        return TableArgs

    async def execute(self, context: ToolContext, args: TableArgs) -> ToolResult:
        self.executions.append(args.table)
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        return ToolResult(success=True, result_for_llm=f"dropped {args.table}")


class MetadataUserResolver(UserResolver):
    """Resolves the user the channel named in ``metadata["user_id"]`` (default: Ana)."""

    async def resolve_user(self, request_context: RequestContext) -> User:
        users = {user.id: user for user in (ANA, BOB, ADMIN)}
        return users[request_context.metadata.get("user_id", ANA.id)]


def as_user(user: User) -> RequestContext:
    return RequestContext(metadata={"user_id": user.id})


def build(
    llm: Any,
    *,
    tools: list[Tool[Any]] = (),  # type: ignore[assignment]
    groups: dict[str, list[str]] | None = None,
    user: User = ANA,
    graph: bool = True,
    **options: Any,
) -> Agent:
    registry = ToolRegistry()
    for tool in tools:
        registry.register_local_tool(tool, (groups or {}).get(tool.name, []))
    options.setdefault("user_resolver", StaticUserResolver(user))
    options.setdefault("agent_memory", InMemoryAgentMemory())
    options.setdefault("conversation_store", MemoryConversationStore())
    cls = GraphAgent if graph else Agent
    return cls(llm_service=llm, tool_registry=registry, **options)


def graph_agent(llm: ScriptedLlmService, **options: Any) -> GraphAgent:
    agent = build(llm, graph=True, **options)
    assert isinstance(agent, GraphAgent)
    return agent


async def collect(
    agent: Agent,
    message: str,
    *,
    conversation_id: str | None = "conv-1",
    context: RequestContext | None = None,
) -> list[UiComponent]:
    return [
        c
        async for c in agent.send_message(
            context or RequestContext(), message, conversation_id=conversation_id
        )
    ]


def of_type(components: list[UiComponent], kind: str) -> list[Any]:
    return [c.rich_component for c in components if c.rich_component.type.value == kind]


def assert_valid(messages: list[Message]) -> None:
    """Every assistant tool call is answered by a tool message, and nothing else is."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls, f"orphan result {message.tool_call_id}"
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"unanswered tool calls {open_calls} before {message.role}"
            open_calls = {c.id for c in message.tool_calls or []}
    assert not open_calls, f"unanswered tool calls {open_calls}"


async def stored(agent: Agent, user: User = ANA, conversation_id: str = "conv-1") -> list[Message]:
    conversation = await agent.conversation_store.get_conversation(conversation_id, user)
    return conversation.messages if conversation else []


@pytest.fixture
def saver() -> InMemorySaver:
    return InMemorySaver()
