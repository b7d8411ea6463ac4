"""Approval inside a turn (the ``act`` stage), shared by ``Agent`` and ``GraphAgent``.

``hold`` runs before a round of tool calls: the calls the asker may make (the permission
check comes first) whose tool needs approval (``ApprovalPolicy.mode``) and whose arguments
validate (an invalid call is never shown for approval: it fails as usual) are held; if any
is, nothing of the round runs, the pending ``ApprovalRecord`` goes into the book, and the
turn ends "waiting for approval" with the conversation saved as it stands. ``ask_once``
calls of a shape this person approved earlier in the thread are not held again.

When the turn resumes (``agent_core.turn.resuming``), ``apply_decision`` runs first:
approved calls run (claimed once: a re-run never runs them twice), any other outcome
answers them "not run" with the reason, and the model goes on.

``settle_superseded`` runs when a newer message arrives in a conversation whose last turn
still waits: the approval expires ("the conversation moved on") and its calls are answered,
so the history the model sees stays valid.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from agent_core.approvals.record import ApprovalRecord, HeldCall, argument_shape
from agent_core.components import UiComponent
from agent_core.conversations import Message
from agent_core.tool_contract import Tool, ToolCall
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.users import User

APPROVAL_KEY = "approval_id"
"""Metadata of the assistant message whose calls wait: which approval they wait for."""
WAITING = "Waiting for approval"


def _validated(tool: Tool[Any], call: ToolCall) -> dict[str, Any] | None:
    try:
        args = tool.get_args_schema().model_validate(call.arguments)
    except PydanticValidationError:
        return None
    dumped: dict[str, Any] = args.model_dump(mode="json")
    return dumped


async def _needs_approval(deps: TurnDeps, state: TurnState, call: ToolCall) -> HeldCall | None:
    user, registry, policy = state.require_user(), deps.tool_registry, deps.config.approvals
    tool = registry.peek(call.name)
    if tool is None or (mode := policy.mode(tool)) == "never":
        return None  # the common case: the mode is read before the person's access
    if not registry.can_use(call.name, user):
        return None  # refused by the registry as usual, without asking anyone
    arguments = _validated(tool, call)
    if arguments is None:
        return None  # fails validation as usual: never shown for approval
    if mode == "ask_once" and await deps.approval_book.approved_once(
        state.conversation_id or "", user.id, tool.name, argument_shape(arguments)
    ):
        return None
    return HeldCall(
        id=call.id, tool=call.name, arguments=arguments, approvers=policy.approvers_of(call.name)
    )


async def hold(deps: TurnDeps, state: TurnState) -> list[UiComponent] | None:
    """Hold the round when a call needs approval: the approval's components, else None."""
    held = [
        needed
        for call in state.pending_tool_calls
        if (needed := await _needs_approval(deps, state, call)) is not None
    ]
    if not held:
        return None
    user, policy = state.require_user(), deps.config.approvals
    now = deps.approval_book.clock()
    record = ApprovalRecord(
        id=os.urandom(12).hex(),
        conversation_id=state.conversation_id or "",
        turn_id=state.request_id,
        question=state.message,
        asker_id=user.id,
        asker_name=user.username or user.id,
        request=dict(state.request_context.metadata),
        calls=held,
        component_id=os.urandom(8).hex(),
        created_at=now,
        expires_at=now + min(policy.expiry_of(call.tool) for call in held),
    )
    _mark_waiting(state, record.id)
    await deps.approval_book.open(record)
    state.awaiting = record
    await audit(deps, record, event="requested", user=user)
    return [record.view()]  # the turn then finishes "waiting for approval" (``finish``)


def _mark_waiting(state: TurnState, approval_id: str) -> None:
    """Note on the assistant message whose calls wait which approval they wait for."""
    messages = state.require_conversation().messages
    if messages and messages[-1].tool_calls:
        last = messages[-1]
        messages[-1] = last.model_copy(
            update={"metadata": {**last.metadata, APPROVAL_KEY: approval_id}}
        )


NOT_RUN = {
    "denied": "Not run: {by} denied this tool call.",
    "expired": "Not run: the approval expired before anyone decided.",
    "cancelled": "Not run: the asker stopped it while it waited for approval.",
}
RAN_BEFORE = (
    "Not run again: an earlier run of this approved call was interrupted, and it may have "
    "completed; check before asking again."
)


async def apply_decision(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    """The decision of the approval being resumed, applied to its held calls."""
    record, state.approval = state.approval, None
    if record is None:
        return []
    if record.state == "approved":
        if await deps.approval_book.claim_run(record.id):
            await _remember_once(deps, state, record)
            return []
        note = RAN_BEFORE
    else:
        note = NOT_RUN.get(record.state, NOT_RUN["expired"]).format(
            by=record.decided_by or "someone"
        )
        if record.note:
            note = f"{note} ({record.note})"
    answer_held(state, record, note)
    return []


async def _remember_once(deps: TurnDeps, state: TurnState, record: ApprovalRecord) -> None:
    policy, registry = deps.config.approvals, deps.tool_registry
    for call in record.calls:
        tool = registry.peek(call.tool)
        if tool is not None and policy.mode(tool) == "ask_once":
            await deps.approval_book.remember_once(
                record.conversation_id,
                record.asker_id,
                call.tool,
                argument_shape(call.arguments),
                ttl=policy.remember_for,
            )


def answer_held(state: TurnState, record: ApprovalRecord, note: str) -> None:
    """Answer the held calls with ``note`` and drop them from the round about to run."""
    held = {call.id: call.tool for call in record.calls}
    conversation = state.require_conversation()
    for call_id, tool in held.items():
        conversation.add_message(
            Message(
                role="tool",
                content=note,
                tool_call_id=call_id,
                metadata={"success": False, "tool": tool, "approval": record.state},
            )
        )
    response = state.response
    if response is not None:
        kept = [call for call in response.tool_calls or [] if call.id not in held]
        state.response = response.model_copy(update={"tool_calls": kept or None})


SUPERSEDED = "a newer message came before anyone decided"


async def settle_superseded(deps: TurnDeps, state: TurnState) -> None:
    """A new message in a conversation whose last turn still waits: that approval expires
    and its calls are answered "not run", so the history stays valid."""
    messages = state.require_conversation().messages
    if not messages or not messages[-1].tool_calls:
        return
    approval_id = messages[-1].metadata.get(APPROVAL_KEY)
    if not isinstance(approval_id, str):
        return
    record = await deps.approval_book.decide(approval_id, "expired", by=None, note=SUPERSEDED)
    if record is None:
        record = await deps.approval_book.get(approval_id)
    if record is None:
        return
    await audit(deps, record, event="decided", user=None)
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    for call in messages[-1].tool_calls or []:
        if call.id not in answered:
            state.require_conversation().add_message(
                Message(role="tool", content=f"Not run: {SUPERSEDED}.", tool_call_id=call.id)
            )


async def audit(deps: TurnDeps, record: ApprovalRecord, *, event: str, user: User | None) -> None:
    """Record the request or the decision in the audit log (who, what, when)."""
    logger, config = deps.audit_logger, deps.config.audit_config
    if logger is None or not config.enabled:
        return
    await logger.log_approval(record, event=event, user=user)
