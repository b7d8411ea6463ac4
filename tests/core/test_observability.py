"""Every span and metric of the spec, with its attributes; no span left open (improvement 6)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_core import Agent, AgentConfig, ScriptedLlmService, ScriptedResponse
from agent_core.errors import LlmServerError
from tests.support.tools import EchoTool

from .conftest import ADMIN, collect
from .harness import (
    Recorder,
    RecordingEnhancer,
    RecordingEnricher,
    RecordingFilter,
    RecordingHook,
    RecordingMiddleware,
    RecordingObservability,
)

SPANS = {
    "agent.user_resolution": {"has_context", "user_id"},
    "agent.send_message": {"user_id", "conversation_id", "tool_iterations", "hit_tool_limit"},
    "agent.hook.before_message": {"hook", "modified_message"},
    "agent.hook.after_message": {"hook"},
    "agent.hook.before_tool": {"hook", "tool"},
    "agent.hook.after_tool": {"hook", "tool", "modified_result"},
    "agent.conversation.load": {"conversation_id", "user_id", "is_new", "message_count"},
    "agent.conversation.save": {"conversation_id", "message_count"},
    "agent.conversation.filter": {"filter", "message_count_before", "message_count_after"},
    "agent.workflow_handler.try_handle": {"user_id", "conversation_id", "should_skip_llm"},
    "agent.system_prompt.build": {"tool_count", "prompt_length"},
    "agent.llm_context.enhance_system_prompt": {"enhancer"},
    "agent.llm_context.enhance_user_messages": {"enhancer", "message_count", "message_count_after"},
    "agent.tool_schemas.fetch": {"user_id", "schema_count"},
    "agent.context.enrichment": {"enricher"},
    "agent.tool.execute": {"tool", "arg_count", "success", "error"},
    "agent.middleware.before_llm": {"middleware", "stream"},
    "agent.middleware.after_llm": {"middleware", "stream"},
    "llm.stream": {"model", "content_length", "tool_call_count"},
}
METRICS = {
    "agent.user_resolution.duration": set(),
    "agent.hook.duration": {"hook", "phase"},
    "agent.conversation.load.duration": {"is_new"},
    "agent.conversation.save.duration": set(),
    "agent.system_prompt.duration": set(),
    "agent.llm_context.enhance_system_prompt.duration": {"enhancer"},
    "agent.llm_context.enhance_user_messages.duration": {"enhancer"},
    "agent.tool_schemas.duration": {"schema_count"},
    "agent.enrichment.duration": {"enricher"},
    "agent.tool.duration": {"tool", "success"},
    "agent.filter.duration": {"filter"},
    "agent.middleware.duration": {"middleware", "phase", "stream"},
    "llm.stream.duration": set(),
    "agent.message.duration": {"user_id", "hit_tool_limit"},
}


def full_agent(
    make_agent: Callable[..., Agent],
    provider: RecordingObservability,
    llm: ScriptedLlmService,
    **kwargs: object,
) -> Agent:
    log = Recorder()
    return make_agent(
        llm,
        tools=[(EchoTool(), [])],
        user=ADMIN,
        observability_provider=provider,
        lifecycle_hooks=[RecordingHook(log)],
        llm_middlewares=[RecordingMiddleware(log)],
        context_enrichers=[RecordingEnricher(log)],
        llm_context_enhancer=RecordingEnhancer(log),
        conversation_filters=[RecordingFilter(log)],
        **kwargs,
    )


async def test_every_span_and_metric_of_a_tool_turn(make_agent: Callable[..., Agent]) -> None:
    provider = RecordingObservability()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "x"}), "done"])
    await collect(full_agent(make_agent, provider, llm), "go")
    for name, attributes in SPANS.items():
        spans = provider.named(name)
        assert spans, f"missing span {name}"
        assert attributes <= set(spans[0].attributes), (name, spans[0].attributes)
    metrics = {name: tags for name, _, _, tags in provider.metrics}
    for name, tags in METRICS.items():
        assert name in metrics, f"missing metric {name}"
        assert tags <= set(metrics[name]), (name, metrics[name])
    assert provider.open_spans == set()
    root = provider.named("agent.send_message")[0]
    assert provider.named("agent.user_resolution")[0].parent_id == root.id
    assert provider.named("agent.hook.before_tool")[0].parent_id == (
        provider.named("agent.tool.execute")[0].id
    )


async def test_starter_ui_and_non_streaming_spans(make_agent: Callable[..., Agent]) -> None:
    provider = RecordingObservability()
    agent = full_agent(
        make_agent,
        provider,
        ScriptedLlmService(["plain"]),
        config=AgentConfig(stream_responses=False),
    )
    await collect(agent, "")
    await collect(agent, "hi")
    starter = provider.named("agent.workflow_handler.starter_ui")[0]
    assert {"user_id", "has_components", "component_count"} <= set(starter.attributes)
    llm_call = provider.named("llm.request")[0].attributes
    assert {"model": "scripted", "stream": False}.items() <= llm_call.items()
    assert llm_call["gen_ai.operation.name"] == "chat"
    assert llm_call["gen_ai.request.model"] == "scripted"
    names = {m[0] for m in provider.metrics}
    assert {"agent.workflow_handler.starter_ui.duration", "llm.request.duration"} <= names
    assert provider.open_spans == set()


@pytest.mark.parametrize("cancel", [False, True])
async def test_error_and_stop_close_every_span(
    make_agent: Callable[..., Agent], cancel: bool
) -> None:
    provider = RecordingObservability()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "x"}), LlmServerError("x")])
    stream = full_agent(make_agent, provider, llm).send_message(
        __import__("agent_core").RequestContext(), "go", conversation_id="c"
    )
    async for component in stream:
        if cancel and component.rich_component.type.value == "tool_status":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert provider.open_spans == set()
    if not cancel:
        error = provider.named("agent.send_message.error")[0]
        assert error.attributes["error_type"] == "LlmServerError"
        assert {"error_message", "conversation_id"} <= set(error.attributes)
        assert ("agent.error.count", 1, "count", {"error_type": "LlmServerError"}) in (
            provider.metrics
        )
