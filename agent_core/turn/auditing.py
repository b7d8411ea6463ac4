"""What a turn writes to the audit log itself (tool calls are the registry's): the question,
a command answered without the model, and a refusal or a budget stop."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent_core.errors import AgentError, BudgetExceededError

if TYPE_CHECKING:
    from agent_core.audit import AuditLogger
    from agent_core.turn.deps import TurnDeps
    from agent_core.turn.state import TurnState

logger = logging.getLogger("threadline.audit")


def _questions_auditor(deps: TurnDeps) -> AuditLogger | None:
    config = deps.config.audit_config
    if deps.audit_logger is None or not config.enabled or not config.log_questions:
        return None
    return deps.audit_logger


async def audit_question(deps: TurnDeps, state: TurnState) -> None:
    """Who asked, where, and (when configured) what."""
    if (audit := _questions_auditor(deps)) is None or state.user is None:
        return
    await audit.log_question(
        state.user,
        conversation_id=state.conversation_id or "",
        request_id=state.request_id,
        text=state.message,
        include_text=deps.config.audit_config.include_question_text,
    )


async def audit_command(deps: TurnDeps, state: TurnState) -> None:
    """A message a workflow command answered without the model (``/usage``, ``/share``)."""
    if (audit := _questions_auditor(deps)) is None or state.user is None:
        return
    await audit.log_command(
        state.user,
        conversation_id=state.conversation_id or "",
        request_id=state.request_id,
        command=state.message,
    )


async def audit_refusal(deps: TurnDeps, state: TurnState, reason: str | Exception) -> None:
    """A turn refused (groups, a permission, a quota) or stopped by a budget. Never raises:
    the state store may be what failed."""
    if (audit := _questions_auditor(deps)) is None or state.user is None:
        return
    if isinstance(reason, Exception) and not isinstance(reason, AgentError):
        return  # a failure, not a refusal: the log has it
    try:
        await audit.log_refusal(
            state.user,
            conversation_id=state.conversation_id or "",
            request_id=state.request_id,
            reason=str(reason),
            budget=isinstance(reason, BudgetExceededError),
        )
    except Exception:  # the turn is already answering with its refusal
        logger.warning("refusal not audited", exc_info=True)
