"""Bad input: the LLM's mistakes and broken extensions get clear answers, never a crash."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_core import (
    Agent,
    AgentError,
    LifecycleHook,
    ScriptedLlmService,
    ScriptedResponse,
    ToolContext,
    User,
)
from tests.support.tools import EchoTool

from .conftest import ADMIN, USER, collect, content


def tool_results(llm: ScriptedLlmService, request: int = 1) -> list[str]:
    return [m.content for m in llm.requests[request].messages if m.role == "tool"]


async def test_invalid_tool_arguments_go_back_to_the_llm(
    make_agent: Callable[..., Agent],
) -> None:
    tool = EchoTool()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"txt": 3}), "sorry"])
    await collect(make_agent(llm, tools=[(tool, [])]), "go")
    assert tool.executions == []
    assert tool_results(llm) == ["Invalid arguments for tool 'echo': text: Field required"]


async def test_unknown_tool_goes_back_to_the_llm(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService([ScriptedResponse.tool("drop_tables", {}), "sorry"])
    out = await collect(make_agent(llm), "go")
    assert tool_results(llm) == ["Tool 'drop_tables' not found"]
    assert not [c for c in out if c.rich_component.type.value == "status_card"]


async def test_before_tool_agent_error_blocks_only_that_tool(
    make_agent: Callable[..., Agent],
) -> None:
    class NoEchoOnFriday(LifecycleHook):
        async def before_tool(self, tool: Any, context: ToolContext) -> None:
            raise AgentError("echo is disabled today")

    tool = EchoTool()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "x"}), "understood"])
    out = await collect(
        make_agent(llm, tools=[(tool, [])], lifecycle_hooks=[NoEchoOnFriday()]), "go"
    )
    assert tool.executions == []
    assert tool_results(llm) == ["Tool call blocked: echo is disabled today"]
    assert content(out)[-1].rich_component.content == "understood"  # type: ignore[attr-defined]


async def test_unexpected_llm_exception_generic_for_users_detailed_for_admins(
    make_agent: Callable[..., Agent],
) -> None:
    def run(user: User) -> Any:
        llm = ScriptedLlmService([KeyError("internal_field")])
        return collect(make_agent(llm, user=user), "hi")

    user_view, admin_view = await run(USER), await run(ADMIN)
    card = content(user_view)[0].rich_component
    assert "Something went wrong" in card.description  # type: ignore[attr-defined]
    assert "internal_field" not in "".join(c.model_dump_json() for c in user_view)
    detail = [c for c in admin_view if c.ui_feature == "tool_error"]
    assert detail and detail[0].audience == "requester"
    assert "internal_field" in detail[0].rich_component.message  # type: ignore[attr-defined]


async def test_user_resolver_failure_is_an_error_card(make_agent: Callable[..., Agent]) -> None:
    from agent_core import UserResolver

    class Refuses(UserResolver):
        async def resolve_user(self, request_context: Any) -> User:
            raise AgentError("Unknown workspace")

    out = await collect(make_agent(ScriptedLlmService(), user_resolver=Refuses()), "hi")
    assert content(out)[0].rich_component.description == "Unknown workspace"  # type: ignore[attr-defined]
