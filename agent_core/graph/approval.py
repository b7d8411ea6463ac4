"""Human approval of tool calls in a ``GraphAgent`` turn.

A tool opts in with a class attribute ``requires_approval = True``. When the LLM calls it
(and the asker may use it), the ``tools`` node pauses the turn with LangGraph's
``interrupt()`` before anything runs. The asker sees an approval card and Approve / Deny
buttons whose actions are the messages ``/approve <id>`` and ``/deny <id>``; sending one
(through ``send_message`` like any button click, or ``GraphAgent.resume``) resumes the turn:
approved calls run, denied ones are answered "not run" for the LLM.

This module is the data and the UI; the pause itself lives in ``agent_core.graph.turn``.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel

from agent_core.components import (
    ButtonGroupComponent,
    ButtonSpec,
    CardComponent,
    NotificationComponent,
    UiComponent,
)
from agent_core.config import UiFeature
from agent_core.conversations import Message
from agent_core.tools.base import ToolCall
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components

DENIED_NOTE = "Not run: the user denied this tool call."

_DECISION = re.compile(r"^\s*/(approve|deny)\s+(\S+)\s*$", re.IGNORECASE)


class ApprovalRequest(BaseModel):
    """What a paused turn waits for: the asker's decision on ``calls`` (the interrupt value).

    >>> ApprovalRequest(user_id="u1", calls=[ToolCall(id="c1", name="drop_table")]).calls[0].name
    'drop_table'
    """

    user_id: str
    calls: list[ToolCall]


class ApprovalDecision(BaseModel):
    """A parsed ``/approve <id>`` or ``/deny <id>`` message.

    >>> parse_decision("/deny 7f3a").approved
    False
    """

    approval_id: str
    approved: bool


def parse_decision(message: str) -> ApprovalDecision | None:
    match = _DECISION.match(message)
    if match is None:
        return None
    return ApprovalDecision(approval_id=match[2], approved=match[1].lower() == "approve")


def decision_message(approval_id: str, *, approved: bool) -> str:
    return f"/{'approve' if approved else 'deny'} {approval_id}"


def gated_calls(deps: TurnDeps, state: TurnState) -> list[ToolCall]:
    """The pending calls that need approval: tools marked ``requires_approval`` that the
    asker may use (the registry refuses the others without running anything)."""
    user = state.require_user()
    registry = deps.tool_registry
    return [
        call
        for call in state.pending_tool_calls
        if registry.can_use(call.name, user)
        and getattr(registry.peek(call.name), "requires_approval", False) is True
    ]


def deny(state: TurnState, calls: list[ToolCall]) -> list[UiComponent]:
    """Answer the denied ``calls`` in the conversation and drop them from what ``act`` runs."""
    denied = {call.id for call in calls}
    conversation = state.require_conversation()
    for call in calls:
        conversation.add_message(
            Message(
                role="tool",
                content=DENIED_NOTE,
                tool_call_id=call.id,
                metadata={"success": False, "tool": call.name, "denied": True},
            )
        )
    response = state.response
    if response is not None:
        kept = [call for call in response.tool_calls or [] if call.id not in denied]
        state.response = response.model_copy(update={"tool_calls": kept or None})
    note = f"Not run: you denied {_describe(state, calls)}."
    return [UiComponent.of(NotificationComponent(message=note, level="info"), note)]


def _describe(state: TurnState, calls: list[ToolCall]) -> str:
    if state.can(UiFeature.TOOL_NAMES):
        return ", ".join(f"`{call.name}`" for call in calls)
    return "1 action" if len(calls) == 1 else f"{len(calls)} actions"


def approval_components(
    deps: TurnDeps, state: TurnState, request: ApprovalRequest, approval_id: str
) -> list[UiComponent]:
    """The approval card, private arguments (for those who may see them), the buttons."""
    text = f"I need your approval to run {_describe(state, request.calls)}."
    out = [
        UiComponent.of(
            CardComponent(title="Approval needed", content=text, status="warning", markdown=True),
            text,
        )
    ]
    feature = UiFeature.TOOL_ARGUMENTS
    if state.can(feature):
        arguments = json.dumps(
            {call.name: call.arguments for call in request.calls}, indent=2, default=str
        )
        out.append(
            UiComponent.of(
                CardComponent(
                    title="Arguments", content=f"```json\n{arguments}\n```", markdown=True
                ),
                arguments,
                audience=deps.config.ui_features.audience_of(feature),
                ui_feature=feature.value,
            )
        )
    approve = decision_message(approval_id, approved=True)
    refuse = decision_message(approval_id, approved=False)
    out.append(
        UiComponent.of(
            ButtonGroupComponent(
                buttons=[
                    ButtonSpec(label="Approve", action=approve, variant="success"),
                    ButtonSpec(label="Deny", action=refuse, variant="error"),
                ]
            ),
            f"Reply `{approve}` or `{refuse}`.",
        )
    )
    return [*out, *closing_components("warning", "Waiting for approval")]


RefusalReason = Literal["missing", "busy", "not_yours", "expired"]

_REFUSALS: dict[RefusalReason, str] = {
    "missing": "There is no pending approval `{id}` in this conversation.",
    "busy": "Approval `{id}` is already being handled.",
    "not_yours": "Only the person who asked can answer approval `{id}`.",
    "expired": "Approval `{id}` expired: the conversation has moved on. Please ask again.",
}


def refusal(reason: RefusalReason, approval_id: str) -> list[UiComponent]:
    """Why an ``/approve`` or ``/deny`` did nothing, then the input re-enabled."""
    text = _REFUSALS[reason].format(id=approval_id)
    card = CardComponent(title="Approval", content=text, status="warning", markdown=True)
    return [UiComponent.of(card, text), *closing_components("idle", "Ready")]
