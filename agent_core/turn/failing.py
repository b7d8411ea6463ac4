"""``fail``: the turn's outer error handler.

Of a failed turn only the question is kept: the stored conversation gets the user's message,
marked ``unanswered``, and a short assistant note that it was not answered, so "try again"
(or "and in March?") reaches a model that knows what was asked. Whatever the turn did after
the question (tool calls, partial text) is rolled back. A refusal before the conversation
was read (a quota, a permission) keeps nothing.
"""

from __future__ import annotations

import logging

from agent_core.components import (
    ComponentStream,
    NotificationComponent,
    StatusCardComponent,
    UiComponent,
)
from agent_core.config import UiFeature
from agent_core.conversations import Message
from agent_core.errors import AgentError, LlmError, StateUnavailableError, log_failure
from agent_core.turn.auditing import audit_refusal
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components

logger = logging.getLogger("threadline.agent")

UNANSWERED = "unanswered"
"""``Message.metadata`` flag of a question whose turn failed."""


def public_error_message(error: Exception, request_id: str) -> str:
    """What the asker is told about ``error``: never its internals (admins get those).

    >>> public_error_message(RuntimeError("db password wrong"), "0123456789")
    'Something went wrong while answering (reference 01234567).'
    """
    match error:
        case AgentError():
            return str(error)
        case LlmError():
            return "The AI service could not answer right now. Please try again in a moment."
        case StateUnavailableError():
            return "Threadline is temporarily unavailable. Please try again shortly."
        case _:
            return f"Something went wrong while answering (reference {request_id[:8]})."


def error_card(error: Exception, message: str) -> StatusCardComponent:
    """The card the asker sees, titled for what happened: ``AgentError`` (a quota, a
    permission, a configuration the agent refuses) says why the turn was not answered.

    >>> card = error_card(AgentError("You have reached your limit."), "You have reached...")
    >>> card.title, card.status
    ('Not answered', 'error')
    """
    title = "Not answered" if isinstance(error, AgentError) else "Could not answer"
    return StatusCardComponent(title=title, status="error", description=message)


async def fail(deps: TurnDeps, state: TurnState, error: Exception) -> ComponentStream:
    """The outer error handler: log (a refusal once, without a traceback: it is the agent
    doing its job), trace, keep the question, error card, admin-only detail, re-enable
    input."""
    log_failure(logger, error, f"turn {state.request_id}")
    async with deps.tracer.span(
        "agent.send_message.error",
        error_type=type(error).__name__,
        error_message=str(error),
        conversation_id=state.conversation_id,
    ):
        await deps.tracer.metric(
            "agent.error.count", 1, "count", {"error_type": type(error).__name__}
        )
    message = public_error_message(error, state.request_id)
    await audit_refusal(deps, state, error)
    await keep_question(deps, state, message)
    yield UiComponent.of(error_card(error, message), message)
    if state.can(UiFeature.TOOL_ERROR) and not isinstance(error, AgentError):
        detail = f"{type(error).__name__}: {error}"
        yield UiComponent.of(
            NotificationComponent(title="Error detail", message=detail, level="error"),
            detail,
            audience=deps.config.ui_features.audience_of(UiFeature.TOOL_ERROR),
            ui_feature=UiFeature.TOOL_ERROR.value,
        )
    for component in closing_components("error", message):
        yield component


async def keep_question(deps: TurnDeps, state: TurnState, told: str) -> None:
    """Store the conversation as it was plus the question, marked unanswered, and a note of
    what the asker was told. Never raises: the state may be what failed."""
    conversation = state.conversation
    if conversation is None or state.saved or not deps.config.auto_save_conversations:
        return
    if state.resumed_from is not None:  # its question was committed when it paused
        await _keep_resumed(deps, state, told)
        return
    asked = conversation.messages[state.committed_messages : state.committed_messages + 1]
    if not asked or asked[0].role != "user":
        return
    question = asked[0].model_copy(update={"metadata": {**asked[0].metadata, UNANSWERED: True}})
    kept = conversation.snapshot()
    kept.messages = [
        *conversation.messages[: state.committed_messages],
        question,
        Message(role="assistant", content=f"(Not answered: {told})"),
    ]
    try:
        await deps.conversation_store.update_conversation(kept)
    except Exception as problem:  # e.g. the state is down: the question is lost, said once
        logger.warning(
            "turn %s: the unanswered question was not kept (%s)",
            state.request_id,
            type(problem).__name__,
        )
        return
    state.saved = True


async def _keep_resumed(deps: TurnDeps, state: TurnState, told: str) -> None:
    """A resumed turn that failed: what it did is kept (a tool that ran stays recorded as
    run), every call answered, and a note of what the asker was told."""
    state.close_dangling_tool_calls(f"Not run: the turn failed ({told})")
    conversation = state.require_conversation()
    conversation.add_message(Message(role="assistant", content=f"(Not answered: {told})"))
    try:
        await deps.conversation_store.update_conversation(conversation)
    except Exception as problem:
        logger.warning(
            "turn %s: the resumed turn was not kept (%s)", state.request_id, type(problem).__name__
        )
        return
    state.saved = True
