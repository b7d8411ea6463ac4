"""``fail``: the turn's outer error handler. Nothing of a failed turn is saved."""

from __future__ import annotations

import logging

from agent_core.components import (
    ComponentStream,
    NotificationComponent,
    StatusCardComponent,
    UiComponent,
)
from agent_core.config import UiFeature
from agent_core.errors import AgentError, LlmError, StateUnavailableError
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components

logger = logging.getLogger("threadline.agent")


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


async def fail(deps: TurnDeps, state: TurnState, error: Exception) -> ComponentStream:
    """The outer error handler: log, trace, error card, admin-only detail, re-enable input.

    Nothing of the failed turn is saved: the stored conversation stays as it was.
    """
    logger.error("turn %s failed", state.request_id, exc_info=error)
    async with deps.tracer.span(
        "agent.send_message.error", error_type=type(error).__name__,
        error_message=str(error), conversation_id=state.conversation_id,
    ):
        await deps.tracer.metric(
            "agent.error.count", 1, "count", {"error_type": type(error).__name__}
        )
    message = public_error_message(error, state.request_id)
    card = StatusCardComponent(title="Error", status="error", description=message)
    yield UiComponent.of(card, message)
    if state.can(UiFeature.TOOL_ERROR) and not isinstance(error, AgentError):
        detail = f"{type(error).__name__}: {error}"
        yield UiComponent.of(
            NotificationComponent(title="Error detail", message=detail, level="error"), detail,
            audience=deps.config.ui_features.audience_of(UiFeature.TOOL_ERROR),
            ui_feature=UiFeature.TOOL_ERROR.value,
        )
    for component in closing_components("error", message):
        yield component
