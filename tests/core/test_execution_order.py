"""The spec's "Execution Order Summary", asserted call by call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_core import (
    Agent,
    LlmRequest,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
    User,
)
from agent_core.errors import LlmServerError
from tests.support.tools import EchoTool

from .conftest import USER, collect, types_of
from .harness import (
    Recorder,
    RecordingEnhancer,
    RecordingEnricher,
    RecordingFilter,
    RecordingHook,
    RecordingMiddleware,
    RecordingPromptBuilder,
    RecordingResolver,
    RecordingStore,
    RecordingWorkflow,
)


class RecordingRegistry(ToolRegistry):
    def __init__(self, log: Recorder) -> None:
        super().__init__()
        self.log = log

    async def get_schemas(self, user: User | None = None) -> Any:
        self.log("tool_schemas")
        return await super().get_schemas(user)


def logged(log: Recorder, entry: Any) -> Callable[[LlmRequest], Any]:
    def respond(request: LlmRequest) -> Any:
        log("llm")
        return entry

    return respond


def recorded_agent(
    make_agent: Callable[..., Agent],
    log: Recorder,
    script: list[Any],
    workflow_handles: str | None = None,
) -> Agent:
    registry = RecordingRegistry(log)
    registry.register_local_tool(EchoTool(), ["user"])
    return make_agent(
        ScriptedLlmService([logged(log, entry) for entry in script]),
        tool_registry=registry,
        user_resolver=RecordingResolver(log, USER),
        conversation_store=RecordingStore(log),
        workflow_handler=RecordingWorkflow(log, handles=workflow_handles),
        lifecycle_hooks=[RecordingHook(log, "h1"), RecordingHook(log, "h2")],
        llm_middlewares=[RecordingMiddleware(log)],
        context_enrichers=[RecordingEnricher(log)],
        llm_context_enhancer=RecordingEnhancer(log),
        conversation_filters=[RecordingFilter(log)],
        system_prompt_builder=RecordingPromptBuilder(log),
    )


OPENING = [
    "resolve_user",
    "h1.before_message",
    "h2.before_message",
    "load",
    "try_handle",
    "enrich",
    "tool_schemas",
    "system_prompt",
    "enhance_system_prompt",
]
ONE_LLM_CALL = ["filter", "enhance_user_messages", "before_llm", "llm", "after_llm"]
CLOSING = ["save", "h1.after_message", "h2.after_message"]


async def test_text_turn_order(make_agent: Callable[..., Agent]) -> None:
    log = Recorder()
    agent = recorded_agent(make_agent, log, ["Hi there"])
    await collect(agent, "hello")
    assert log.calls == OPENING + ONE_LLM_CALL + CLOSING


async def test_tool_turn_order(make_agent: Callable[..., Agent]) -> None:
    log = Recorder()
    agent = recorded_agent(make_agent, log, [ScriptedResponse.tool("echo", {"text": "x"}), "done"])
    await collect(agent, "echo x")
    tool_round = ["h1.before_tool:echo", "h2.before_tool:echo", "h1.after_tool", "h2.after_tool"]
    assert log.calls == OPENING + ONE_LLM_CALL + tool_round + ONE_LLM_CALL + CLOSING


async def test_workflow_command_short_circuits(make_agent: Callable[..., Agent]) -> None:
    log = Recorder()
    agent = recorded_agent(make_agent, log, [], workflow_handles="/custom")
    await collect(agent, "/custom")
    assert log.calls == [
        "resolve_user",
        "h1.before_message",
        "h2.before_message",
        "load",
        "try_handle",
    ]


async def test_starter_ui_skips_everything_else(make_agent: Callable[..., Agent]) -> None:
    log = Recorder()
    agent = recorded_agent(make_agent, log, [])
    await collect(agent, "   ")
    assert log.calls == ["resolve_user", "starter_ui"]


async def test_llm_error_order_and_components(make_agent: Callable[..., Agent]) -> None:
    log = Recorder()
    agent = recorded_agent(make_agent, log, [LlmServerError("boom")])
    components = await collect(agent, "hello")
    # issue 17: the unanswered question is kept ("save"), so "try again" works
    assert log.calls == [*OPENING, "filter", "enhance_user_messages", "before_llm", "llm", "save"]
    assert types_of(components)[-3:] == ["status_card", "status_bar_update", "chat_input_update"]
    card = components[-3].rich_component
    assert card.status == "error"  # type: ignore[attr-defined]
    assert "AI service" in card.description  # type: ignore[attr-defined]


async def test_hook_rewrites_message_in_chain(make_agent: Callable[..., Agent]) -> None:
    seen: list[str] = []

    class Upper(RecordingHook):
        async def before_message(self, user: User, message: str) -> str | None:
            seen.append(message)
            return message.upper()

    class Exclaim(RecordingHook):
        async def before_message(self, user: User, message: str) -> str | None:
            seen.append(message)
            return message + "!"

    llm = ScriptedLlmService(["ok"])
    agent = make_agent(llm, lifecycle_hooks=[Upper(Recorder()), Exclaim(Recorder())])
    await collect(agent, "hi", context=RequestContext())
    assert seen == ["hi", "HI"]
    assert llm.requests[0].messages[-1].content == "HI!"
