"""The core behaviour suite runs against every agent implementation through ``make_agent``.

``agent_kind`` is parametrised over the implementations that share the turn's stages
(``Agent`` and, with the ``graph`` extra installed, ``GraphAgent``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

from agent_core import (
    Agent,
    ErrorRecoveryStrategy,
    InMemoryAgentMemory,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    Tool,
    ToolRegistry,
    UiComponent,
    User,
)

AGENT_KINDS = ["agent"]
if (
    importlib.util.find_spec("langgraph") is not None
    and importlib.util.find_spec("agent_core.graph.agent") is not None
):
    AGENT_KINDS.append("graph")

USER = User(id="u-user", username="Uma", group_memberships=["user"])
ADMIN = User(id="u-admin", username="Ada", group_memberships=["admin", "user"])
OUTSIDER = User(id="u-out", group_memberships=["guest"])


@pytest.fixture(params=AGENT_KINDS)
def agent_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_agent(agent_kind: str) -> Callable[..., Agent]:
    """Build an agent of the parametrised kind; defaults: scripted LLM, no tools, a user."""

    def build(
        llm: ScriptedLlmService | Any = None,
        *,
        tools: list[tuple[Tool[Any], list[str]]] = (),  # type: ignore[assignment]
        user: User = USER,
        **kwargs: Any,
    ) -> Agent:
        registry = kwargs.pop("tool_registry", None) or ToolRegistry()
        for tool, groups in tools:
            registry.register_local_tool(tool, groups)
        kwargs.setdefault("user_resolver", StaticUserResolver(user))
        kwargs.setdefault("agent_memory", InMemoryAgentMemory())
        # these tests script LLM failures and expect them at once; the default strategy's
        # retries have tests of their own (tests/llm/test_default_recovery.py)
        kwargs.setdefault("error_recovery_strategy", ErrorRecoveryStrategy())
        cls: type[Agent] = Agent
        if agent_kind == "graph":
            from agent_core.graph import GraphAgent

            cls = GraphAgent  # type: ignore[assignment]
        return cls(
            llm_service=llm if llm is not None else ScriptedLlmService(["Hello!"]),
            tool_registry=registry,
            **kwargs,
        )

    return build


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


def types_of(components: list[UiComponent]) -> list[str]:
    return [c.rich_component.type.value for c in components]


def final_text(components: list[UiComponent]) -> str:
    texts = [
        c.rich_component
        for c in components
        if c.rich_component.type.value == "text" and c.audience == "everyone"
    ]
    return texts[-1].content if texts else ""  # type: ignore[attr-defined,no-any-return]


UI_STATE = {"status_bar_update", "chat_input_update", "task_tracker_update"}


def content(components: list[UiComponent]) -> list[UiComponent]:
    """The components with chat meaning (UI-state updates dropped)."""
    return [c for c in components if c.rich_component.type.value not in UI_STATE]
