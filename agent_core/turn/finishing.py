"""``finish``, steps 15-20: the tool-limit notice, save, ``after_message`` hooks, the audit
of the answer, and the idle status."""

from __future__ import annotations

from agent_core.components import NotificationComponent, UiComponent
from agent_core.conversations import Message
from agent_core.turn.approving import WAITING
from agent_core.turn.deps import TurnDeps
from agent_core.turn.saving import save_conversation
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components
from agent_core.users import User


async def finish(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    """Steps 15-20: tool-limit notice, save, after_message hooks, audit, idle status."""
    user, conversation = state.require_user(), state.require_conversation()
    shown: list[UiComponent] = []
    if state.hit_tool_limit:
        note = (
            f"I stopped after {deps.config.max_tool_iterations} rounds of tool calls without "
            "reaching an answer. Try a narrower question."
        )
        state.close_dangling_tool_calls("Not run: the tool-call limit for this turn was reached.")
        conversation.add_message(Message(role="assistant", content=note))
        shown.append(UiComponent.of(NotificationComponent(message=note, level="warning"), note))
    if deps.config.auto_save_conversations:
        await save_conversation(deps, state)
    for hook in deps.lifecycle_hooks:
        async with deps.tracer.span(
            "agent.hook.after_message",
            metric="agent.hook.duration",
            tags={"phase": "after_message"},
            tag_attributes=("hook",),
            hook=type(hook).__name__,
        ):
            await hook.after_message(conversation)
    await _audit_ai_response(deps, state, user)
    if state.awaiting is not None:  # the turn waits for a person's approval
        return [*shown, *closing_components("warning", WAITING)]
    return [*shown, *closing_components("idle", "Ready")]


async def _audit_ai_response(deps: TurnDeps, state: TurnState, user: User) -> None:
    audit, config = deps.audit_logger, deps.config.audit_config
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
