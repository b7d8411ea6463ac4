"""Deciding an approval: a click (Approve / Deny), a Stop, or the clock.

Each is checked in one place, against the approval as the state store holds it and the
clicker as *their* signed payload resolves them now: the approval must exist, belong to the
conversation the click came from (a click from the approver's own home, which lists only
what they may decide, comes from no conversation: ``conversation_id=None``), still be
pending and not expired, and the clicker must be one of its approvers (a Stop: its asker).
The decision itself is the book's atomic one, so of two clicks at once exactly one decides;
the other is told who did. ``resume`` on the answer says whether this call decided it: then,
and only then, the caller resumes the turn
(``Agent.send_message`` with a ``Resume``), on any process.

>>> ApprovalAnswer(decided=False, reason="unknown", message="?").resume
False
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent_core.approvals.record import ApprovalRecord
from agent_core.components import ApprovalState, UiComponent
from agent_core.turn.approving import audit
from agent_core.turn.deps import TurnDeps
from agent_core.users import RequestContext, User

Reason = Literal[
    "decided", "unknown", "elsewhere", "already", "expired", "not_approver", "not_asker"
]


class ApprovalAnswer(BaseModel):
    """What a click (or Stop, or expiry) did: ``decided`` by this call or not, why, the
    words for whoever clicked, and the approval as it now stands.

    >>> ApprovalAnswer(decided=False, reason="not_approver", message="Only Ana may approve.").view()
    """

    model_config = ConfigDict(defer_build=True)

    decided: bool
    reason: Reason
    message: str
    record: ApprovalRecord | None = None

    @property
    def resume(self) -> bool:
        """Whether the caller should resume the paused turn now (this call decided it)."""
        return self.decided and self.record is not None

    def view(self) -> UiComponent | None:
        """The approval as it now stands, to update the message that shows it."""
        return self.record.view() if self.record is not None else None


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime(" at %H:%M UTC")


def _already(record: ApprovalRecord) -> ApprovalAnswer:
    return ApprovalAnswer(
        decided=False,
        reason="already",
        message=f"Already decided: {record.component().outcome()}{_when(record.decided_at)}.",
        record=record,
    )


async def _settle(
    deps: TurnDeps,
    record: ApprovalRecord,
    state: ApprovalState,
    user: User | None,
    note: str | None,
) -> ApprovalAnswer:
    """Make the decision; the winner resumes, anyone else is told what happened."""
    decided = await deps.approval_book.decide(record.id, state, by=user, note=note, read=record)
    if decided is None:
        current = await deps.approval_book.get(record.id)
        return _already(current or record)
    await audit(deps, decided, event="decided", user=user)
    return ApprovalAnswer(
        decided=True,
        reason="expired" if state == "expired" else "decided",
        message=f"{decided.component().outcome()}.",
        record=decided,
    )


async def _open_approval(
    deps: TurnDeps, approval_id: str, conversation_id: str | None
) -> ApprovalRecord | ApprovalAnswer:
    """The pending approval a click may decide, or the answer that says why not."""
    record = await deps.approval_book.get(approval_id)
    if record is None:
        return ApprovalAnswer(
            decided=False, reason="unknown", message="This approval is unknown or too old."
        )
    if conversation_id is not None and record.conversation_id != conversation_id:
        return ApprovalAnswer(
            decided=False,
            reason="elsewhere",
            message="This approval belongs to another conversation.",
        )
    if not record.pending:
        return _already(record)
    return record


async def decide(
    deps: TurnDeps,
    request_context: RequestContext,
    approval_id: str,
    *,
    approve: bool,
    conversation_id: str | None,
) -> ApprovalAnswer:
    """A click on Approve or Deny (``conversation_id``: where it came from; None from the
    clicker's home); see the module docstring."""
    found = await _open_approval(deps, approval_id, conversation_id)
    if isinstance(found, ApprovalAnswer):
        return found
    if found.expired(deps.approval_book.clock()):
        return await _settle(deps, found, "expired", None, None)
    clicker = await deps.user_resolver.resolve_user(request_context)
    if clicker.granted_nothing or not found.may_be_decided_by(clicker):
        return ApprovalAnswer(
            decided=False,
            reason="not_approver",
            message=f"Only {found.approvers_text()} may approve this.",
            record=found,
        )
    return await _settle(deps, found, "approved" if approve else "denied", clicker, None)


async def cancel(
    deps: TurnDeps, request_context: RequestContext, approval_id: str, *, conversation_id: str
) -> ApprovalAnswer:
    """The asker's Stop while the turn waits: the approval is cancelled."""
    found = await _open_approval(deps, approval_id, conversation_id)
    if isinstance(found, ApprovalAnswer):
        return found
    stopper = await deps.user_resolver.resolve_user(request_context)
    if stopper.id != found.asker_id:
        return ApprovalAnswer(
            decided=False,
            reason="not_asker",
            message=f"Only {found.asker_name} can stop this.",
            record=found,
        )
    return await _settle(deps, found, "cancelled", stopper, None)


async def expire_due(deps: TurnDeps, platform: str | None = None) -> list[ApprovalAnswer]:
    """Expire every pending approval asked in ``platform`` whose time is up; the answers
    to resume (each one decided here, exactly once across processes)."""
    answers = []
    for record in await deps.approval_book.due(platform=platform):
        minutes = round((record.expires_at - record.created_at) / 60)
        note = f"nobody decided within {minutes} minute{'s' if minutes != 1 else ''}"
        answer = await _settle(deps, record, "expired", None, note)
        if answer.resume:
            answers.append(answer)
    return answers
