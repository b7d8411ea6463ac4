"""``open_turn``, steps 1-5: who asks, the starter UI, ``before_message`` hooks, the
conversation, and workflow commands (which may answer the turn without the LLM).

A new conversation is not written when it is opened: the turn's one commit stores it, so a
first turn that fails leaves nothing behind, and a turn costs one write."""

from __future__ import annotations

import os

from agent_core.components import ComponentStream, NotificationComponent, UiComponent
from agent_core.conversations import Conversation, Message
from agent_core.turn.approving import settle_superseded
from agent_core.turn.auditing import audit_command, audit_question, audit_refusal
from agent_core.turn.deps import TurnDeps
from agent_core.turn.saving import save_conversation
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components, working
from agent_core.users import OUTSIDER_REFUSAL


async def open_turn(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """Steps 1-5: user, starter UI, before_message hooks, conversation, workflow commands."""
    await _resolve_user(deps, state)
    if not state.require_user().is_member_of(deps.config.allowed_groups):
        await audit_refusal(deps, state, deps.config.refusal)
        yield UiComponent.of(
            NotificationComponent(message=deps.config.refusal, level="warning"), deps.config.refusal
        )
        state.finished = True
        return
    if state.require_user().granted_nothing:  # another organisation's, granted nothing
        if deps.audit_logger is not None and deps.config.audit_config.enabled:
            await deps.audit_logger.log_outsider_refused(
                state.require_user(),
                conversation_id=state.conversation_id or "",
                request_id=state.request_id,
            )
        yield UiComponent.of(
            NotificationComponent(message=OUTSIDER_REFUSAL, level="warning"), OUTSIDER_REFUSAL
        )
        state.finished = True
        return
    if not state.message.strip():
        for component in await _starter_ui(deps, state):
            yield component
        state.finished = True
        return
    if deps.config.include_thinking_indicators:
        yield working()
    await audit_question(deps, state)
    await _before_message_hooks(deps, state)
    await _load_conversation(deps, state)
    for component in await _workflow(deps, state):
        yield component
    if not state.finished:
        await settle_superseded(deps, state)  # a turn still waiting for approval ends here
        state.require_conversation().add_message(Message(role="user", content=state.message))


async def _resolve_user(deps: TurnDeps, state: TurnState) -> None:
    async with deps.tracer.span(
        "agent.user_resolution",
        metric="agent.user_resolution.duration",
        has_context=state.request_context is not None,
    ) as span:
        state.user = await deps.user_resolver.resolve_user(state.request_context)
        span.set_attribute("user_id", state.user.id)
    features = deps.config.ui_features
    state.features = features.features_for(state.user)
    audit = deps.audit_logger
    if (
        audit is not None
        and deps.config.audit_config.enabled
        and (deps.config.audit_config.log_ui_feature_checks)
    ):
        for name, groups in features.feature_group_access.items():
            await audit.log_ui_feature_access(
                state.user,
                name,
                name in state.features,
                list(groups),
                conversation_id=state.conversation_id or "",
                request_id=state.request_id,
            )


async def _starter_ui(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    user = state.require_user()
    async with deps.tracer.span(
        "agent.workflow_handler.starter_ui",
        metric="agent.workflow_handler.starter_ui.duration",
        user_id=user.id,
    ) as span:
        conversation = Conversation(id=state.conversation_id or "starter", user=user)
        handler = deps.workflow_handler
        components = await handler.get_starter_ui(deps.agent, user, conversation) or []
        span.set_attribute("has_components", bool(components))
        span.set_attribute("component_count", len(components))
    return components


async def _before_message_hooks(deps: TurnDeps, state: TurnState) -> None:
    user = state.require_user()
    for hook in deps.lifecycle_hooks:
        name = type(hook).__name__
        async with deps.tracer.span(
            "agent.hook.before_message",
            metric="agent.hook.duration",
            tags={"phase": "before_message"},
            tag_attributes=("hook",),
            hook=name,
        ) as span:
            replacement = await hook.before_message(user, state.message)
            span.set_attribute("modified_message", replacement is not None)
        if replacement is not None:
            state.message = replacement


async def _load_conversation(deps: TurnDeps, state: TurnState) -> None:
    user = state.require_user()
    if state.conversation_id is None:
        state.conversation_id = os.urandom(16).hex()
    async with deps.tracer.span(
        "agent.conversation.load",
        metric="agent.conversation.load.duration",
        tag_attributes=("is_new",),
        conversation_id=state.conversation_id,
        user_id=user.id,
    ) as span:
        conversation = await deps.conversation_store.get_conversation(state.conversation_id, user)
        state.is_new_conversation = conversation is None
        if conversation is None:  # stored with the turn, at its one commit
            conversation = Conversation(id=state.conversation_id, user=user)
        state.conversation = conversation
        state.committed_messages = len(conversation.messages)
        span.set_attribute("is_new", state.is_new_conversation)
        span.set_attribute("message_count", state.committed_messages)


async def _workflow(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    user, conversation = state.require_user(), state.require_conversation()
    async with deps.tracer.span(
        "agent.workflow_handler.try_handle", user_id=user.id, conversation_id=conversation.id
    ) as span:
        handler = deps.workflow_handler
        result = await handler.try_handle(deps.agent, user, conversation, state.message)
        span.set_attribute("should_skip_llm", result.should_skip_llm)
    if not result.should_skip_llm:
        return []
    await audit_command(deps, state)
    if result.conversation_mutation is not None:
        await result.conversation_mutation(conversation)
        await save_conversation(deps, state)
    state.finished = True
    return [*result.components, *closing_components("idle", "Ready")]
