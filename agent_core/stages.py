"""The turn's stages: small async generators over a ``TurnState``, shared by ``Agent`` and
``GraphAgent``. Each yields the components it produces as soon as they exist.

    open_turn -> prepare -> (think -> act)* -> finish          (spec: Execution Order Summary)
                                              \\-> fail | settle_after_stop on error / Stop

Stages that show components as they happen are async generators (``open_turn``, ``think``,
``act``, ``fail``); the others are coroutines (``prepare``) or return their components at the
end (``finish``) - every async generator costs the event loop a registration per turn.

``think`` and ``act`` live in ``agent_core.thinking`` and ``agent_core.acting``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agent_core.components import (
    ChatInputUpdateComponent,
    NotificationComponent,
    RichComponent,
    SimpleTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    UiComponent,
)
from agent_core.components.ui_state import BarStatus
from agent_core.config import UiFeature
from agent_core.conversations import Conversation, Message
from agent_core.errors import AgentError, LlmError, StateUnavailableError
from agent_core.turn import TurnState
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.agent import Agent

logger = logging.getLogger("threadline.agent")

Components = AsyncIterator[UiComponent]

STOPPED_NOTE = "Stopped by the user before it finished."


def ui(rich: RichComponent, text: str | None = None, **envelope: Any) -> UiComponent:
    """Wrap a rich component (and optional plain text) into a ``UiComponent``."""
    simple = SimpleTextComponent(text=text) if text is not None else None
    return UiComponent(rich_component=rich, simple_component=simple, **envelope)


async def open_turn(agent: Agent, state: TurnState) -> Components:
    """Steps 1-5: user, starter UI, before_message hooks, conversation, workflow commands."""
    await _resolve_user(agent, state)
    if not state.message.strip():
        for component in await _starter_ui(agent, state):
            yield component
        state.finished = True
        return
    if agent.config.include_thinking_indicators:
        yield WORKING
    await _before_message_hooks(agent, state)
    await _load_conversation(agent, state)
    for component in await _workflow(agent, state):
        yield component
    if not state.finished:
        state.require_conversation().add_message(Message(role="user", content=state.message))


async def _resolve_user(agent: Agent, state: TurnState) -> None:
    async with agent.tracer.span(
        "agent.user_resolution", metric="agent.user_resolution.duration",
        has_context=state.request_context is not None,
    ) as span:
        state.user = await agent.user_resolver.resolve_user(state.request_context)
        span.set_attribute("user_id", state.user.id)
    features = agent.config.ui_features
    state.features = features.features_for(state.user)
    audit = agent.audit_logger
    if audit is not None and agent.config.audit_config.enabled and (
        agent.config.audit_config.log_ui_feature_checks
    ):
        for name, groups in features.feature_group_access.items():
            await audit.log_ui_feature_access(
                state.user, name, name in state.features, list(groups),
                conversation_id=state.conversation_id or "", request_id=state.request_id,
            )


async def _starter_ui(agent: Agent, state: TurnState) -> list[UiComponent]:
    user = state.require_user()
    async with agent.tracer.span(
        "agent.workflow_handler.starter_ui",
        metric="agent.workflow_handler.starter_ui.duration", user_id=user.id,
    ) as span:
        conversation = Conversation(id=state.conversation_id or "starter", user=user)
        components = await agent.workflow_handler.get_starter_ui(agent, user, conversation) or []
        span.set_attribute("has_components", bool(components))
        span.set_attribute("component_count", len(components))
    return components


async def _before_message_hooks(agent: Agent, state: TurnState) -> None:
    user = state.require_user()
    for hook in agent.lifecycle_hooks:
        name = type(hook).__name__
        async with agent.tracer.span(
            "agent.hook.before_message", metric="agent.hook.duration",
            tags={"phase": "before_message"}, tag_attributes=("hook",), hook=name,
        ) as span:
            replacement = await hook.before_message(user, state.message)
            span.set_attribute("modified_message", replacement is not None)
        if replacement is not None:
            state.message = replacement


async def _load_conversation(agent: Agent, state: TurnState) -> None:
    user = state.require_user()
    if state.conversation_id is None:
        state.conversation_id = os.urandom(16).hex()
    async with agent.tracer.span(
        "agent.conversation.load", metric="agent.conversation.load.duration",
        tag_attributes=("is_new",), conversation_id=state.conversation_id, user_id=user.id,
    ) as span:
        store = agent.conversation_store
        conversation = await store.get_conversation(state.conversation_id, user)
        state.is_new_conversation = conversation is None
        if conversation is None:
            conversation = await store.create_conversation(
                state.conversation_id, user, state.message
            )
        state.conversation = conversation
        state.committed_messages = len(conversation.messages)
        span.set_attribute("is_new", state.is_new_conversation)
        span.set_attribute("message_count", state.committed_messages)


async def _workflow(agent: Agent, state: TurnState) -> list[UiComponent]:
    user, conversation = state.require_user(), state.require_conversation()
    async with agent.tracer.span(
        "agent.workflow_handler.try_handle", user_id=user.id, conversation_id=conversation.id
    ) as span:
        result = await agent.workflow_handler.try_handle(agent, user, conversation, state.message)
        span.set_attribute("should_skip_llm", result.should_skip_llm)
    if not result.should_skip_llm:
        return []
    if result.conversation_mutation is not None:
        await result.conversation_mutation(conversation)
        await save_conversation(agent, state)
    state.finished = True
    return [*result.components, *closing_components("idle", "Ready")]


async def prepare(agent: Agent, state: TurnState) -> None:
    """Steps 6-9: tool context + enrichers, tool schemas, system prompt (+ enhancement)."""
    user, conversation = state.require_user(), state.require_conversation()
    context = agent.tool_context(
        user, conversation_id=conversation.id, request_id=state.request_id,
        request=state.request_context.metadata, question=state.message,
    )  # fmt: skip
    for enricher in agent.context_enrichers:
        name = type(enricher).__name__
        async with agent.tracer.span(
            "agent.context.enrichment", metric="agent.enrichment.duration",
            tag_attributes=("enricher",), enricher=name,
        ):
            context = await enricher.enrich_context(context)
    state.tool_context = context
    async with agent.tracer.span(
        "agent.tool_schemas.fetch", metric="agent.tool_schemas.duration",
        tag_attributes=("schema_count",), user_id=user.id,
    ) as span:
        state.tool_schemas = await agent.tool_registry.get_schemas(user)
        span.set_attribute("schema_count", len(state.tool_schemas))
    await agent.check_tools(state.tool_schemas)
    async with agent.tracer.span(
        "agent.system_prompt.build", metric="agent.system_prompt.duration",
        tool_count=len(state.tool_schemas),
    ) as span:
        prompt = await agent.system_prompt_builder.build_system_prompt(user, state.tool_schemas)
        span.set_attribute("prompt_length", len(prompt or ""))
    enhancer = agent.llm_context_enhancer
    if enhancer is not None:
        name = type(enhancer).__name__
        async with agent.tracer.span(
            "agent.llm_context.enhance_system_prompt",
            metric="agent.llm_context.enhance_system_prompt.duration",
            tag_attributes=("enhancer",), enhancer=name,
        ):
            prompt = await enhancer.enhance_system_prompt_for(context, prompt or "", state.message)
    state.system_prompt = prompt


async def save_conversation(agent: Agent, state: TurnState) -> None:
    conversation = state.require_conversation()
    async with agent.tracer.span(
        "agent.conversation.save", metric="agent.conversation.save.duration",
        conversation_id=conversation.id, message_count=len(conversation.messages),
    ):
        await agent.conversation_store.update_conversation(conversation)
    state.saved = True


# The status bar and the chat input are single client widgets: every turn updates the same
# one, so these instructions are shared values (never mutate a yielded component).
WORKING = ui(StatusBarUpdateComponent(id="status-bar", status="working", message="Working..."))
IDLE = ui(StatusBarUpdateComponent(id="status-bar", status="idle", message="Ready"))
INPUT_READY = ui(ChatInputUpdateComponent(id="chat-input", disabled=False, focus=True))


def closing_components(status: BarStatus, message: str) -> list[UiComponent]:
    if status == "idle":
        return [IDLE, INPUT_READY]
    bar = StatusBarUpdateComponent(id="status-bar", status=status, message=message)
    return [ui(bar), INPUT_READY]


async def finish(agent: Agent, state: TurnState) -> list[UiComponent]:
    """Steps 15-20: tool-limit notice, save, after_message hooks, audit, idle status."""
    user, conversation = state.require_user(), state.require_conversation()
    shown: list[UiComponent] = []
    if state.hit_tool_limit:
        note = (
            f"I stopped after {agent.config.max_tool_iterations} rounds of tool calls without "
            "reaching an answer. Try a narrower question."
        )
        state.close_dangling_tool_calls("Not run: the tool-call limit for this turn was reached.")
        conversation.add_message(Message(role="assistant", content=note))
        shown.append(ui(NotificationComponent(message=note, level="warning"), note))
    if agent.config.auto_save_conversations:
        await save_conversation(agent, state)
    for hook in agent.lifecycle_hooks:
        async with agent.tracer.span(
            "agent.hook.after_message", metric="agent.hook.duration",
            tags={"phase": "after_message"}, tag_attributes=("hook",), hook=type(hook).__name__,
        ):
            await hook.after_message(conversation)
    await _audit_ai_response(agent, state, user)
    return [*shown, *closing_components("idle", "Ready")]


async def _audit_ai_response(agent: Agent, state: TurnState, user: User) -> None:
    audit, config = agent.audit_logger, agent.config.audit_config
    if audit is None or not config.enabled or not config.log_ai_responses:
        return
    response = state.response
    await audit.log_ai_response(
        user,
        conversation_id=state.conversation_id or "",
        request_id=state.request_id,
        response_text=(response.content or "") if response else "",
        tool_call_count=state.tool_iterations,
        include_full_text=config.include_full_ai_responses,
    )


def public_error_message(error: Exception, request_id: str) -> str:
    match error:
        case AgentError():
            return str(error)
        case LlmError():
            return "The AI service could not answer right now. Please try again in a moment."
        case StateUnavailableError():
            return "Threadline is temporarily unavailable. Please try again shortly."
        case _:
            return f"Something went wrong while answering (reference {request_id[:8]})."


async def fail(agent: Agent, state: TurnState, error: Exception) -> Components:
    """The outer error handler: log, trace, error card, admin-only detail, re-enable input.

    Nothing of the failed turn is saved: the stored conversation stays as it was.
    """
    logger.error("turn %s failed", state.request_id, exc_info=error)
    async with agent.tracer.span(
        "agent.send_message.error", error_type=type(error).__name__,
        error_message=str(error), conversation_id=state.conversation_id,
    ):
        await agent.tracer.metric(
            "agent.error.count", 1, "count", {"error_type": type(error).__name__}
        )
    message = public_error_message(error, state.request_id)
    yield ui(StatusCardComponent(title="Error", status="error", description=message), message)
    if state.can(UiFeature.TOOL_ERROR) and not isinstance(error, AgentError):
        detail = f"{type(error).__name__}: {error}"
        yield ui(
            NotificationComponent(title="Error detail", message=detail, level="error"), detail,
            audience=agent.config.ui_features.audience_of(UiFeature.TOOL_ERROR),
            ui_feature=UiFeature.TOOL_ERROR.value,
        )
    for component in closing_components("error", message):
        yield component


async def settle_after_stop(agent: Agent, state: TurnState) -> None:
    """Commit a stopped turn consistently: the question, finished steps, every tool call
    answered, and a note that the user stopped it."""
    conversation = state.conversation
    if conversation is None or state.finished or state.saved:
        return
    if len(conversation.messages) <= state.committed_messages:
        return
    state.close_dangling_tool_calls(STOPPED_NOTE)
    conversation.add_message(Message(role="assistant", content=f"({STOPPED_NOTE})"))
    if agent.config.auto_save_conversations:
        await save_conversation(agent, state)
