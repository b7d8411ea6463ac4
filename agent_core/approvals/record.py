"""``ApprovalRecord``: one paused turn's open question, as the state store keeps it.

It holds what a decision needs and what a resumed turn needs, on any process: the held
calls with their validated arguments and approvers, who asked (their verified request
metadata, to resolve them again), where (the conversation), the question, and when it
expires; then the decision: approved, denied, expired or cancelled, by whom and when.

>>> record = ApprovalRecord.example()
>>> record.view().rich_component.approvers, record.may_be_decided_by(User(id="ana"))
('Ana', True)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.approvals.policy import describe_approvers, may_approve
from agent_core.clock import SYSTEM_CLOCK
from agent_core.components import (
    ApprovalCallView,
    ApprovalComponent,
    ApprovalState,
    ComponentLifecycle,
    UiComponent,
)
from agent_core.users import User


def argument_shape(arguments: dict[str, Any]) -> str:
    """What ``ask_once`` compares: the arguments' names and value types, not their values.

    >>> argument_shape({"order": 1, "note": "x"}) == argument_shape({"note": "y", "order": 2})
    True
    >>> argument_shape({"order": 1}) == argument_shape({"order": "1"})
    False
    """

    def shape(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: shape(item) for key, item in sorted(value.items())}
        if isinstance(value, list):
            return [shape(item) for item in value[:1]]
        return type(value).__name__

    text = json.dumps(shape(arguments), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class HeldCall(BaseModel):
    """A tool call waiting for the decision: its id in the conversation, the tool, its
    validated arguments (as JSON) and who may approve it.

    >>> HeldCall(id="call-1", tool="refund", arguments={"order": 42}, approvers=["asker"]).tool
    'refund'
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    approvers: list[str]


class ApprovalRecord(BaseModel):
    """One pending (or decided) approval; see the module docstring.

    >>> ApprovalRecord.example(state="denied").component().outcome()
    'Denied'
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    conversation_id: str
    turn_id: str
    question: str = ""
    asker_id: str
    asker_name: str
    request: dict[str, Any] = Field(default_factory=dict)
    """The asker's request metadata, as the channel verified it (who, where)."""
    calls: list[HeldCall]
    component_id: str
    created_at: float = Field(default_factory=SYSTEM_CLOCK.now)
    expires_at: float
    state: ApprovalState = "pending"
    decided_by_id: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None
    message: dict[str, Any] | None = None
    """Where a channel showed it (``note_message``), so a decision updates it in place."""

    @classmethod
    def example(cls, **changes: Any) -> ApprovalRecord:
        """A small record for documentation and tests."""
        values: dict[str, Any] = {
            "id": "a1",
            "conversation_id": "c1",
            "turn_id": "t1",
            "asker_id": "ana",
            "asker_name": "Ana",
            "calls": [HeldCall(id="call-1", tool="refund", arguments={}, approvers=["asker"])],
            "component_id": "v1",
            "expires_at": SYSTEM_CLOCK.now() + 900,
        }
        return cls(**{**values, **changes})

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    def expired(self, now: float | None = None) -> bool:
        return (SYSTEM_CLOCK.now() if now is None else now) >= self.expires_at

    def may_be_decided_by(self, user: User) -> bool:
        """Whether ``user`` may approve every held call."""
        return all(may_approve(user, call.approvers, self.asker_id) for call in self.calls)

    def approvers_text(self) -> str:
        """Who may approve, in words."""
        kinds = {tuple(call.approvers) for call in self.calls}
        return "; ".join(describe_approvers(list(kind), self.asker_name) for kind in sorted(kinds))

    def decided(
        self, state: ApprovalState, *, by: User | None, at: float, note: str | None = None
    ) -> ApprovalRecord:
        return self.model_copy(
            update={
                "state": state,
                "decided_by_id": by.id if by else None,
                "decided_by": (by.username or by.id) if by else None,
                "decided_at": at,
                "note": note,
            }
        )

    def component(self) -> ApprovalComponent:
        """The approval as people see it (a new version of the same component)."""
        return ApprovalComponent(
            id=self.component_id,
            approval_id=self.id,
            calls=[
                ApprovalCallView(tool=call.tool, arguments=call.arguments) for call in self.calls
            ],
            asker=self.asker_name,
            approvers=self.approvers_text(),
            expires_at=self.expires_at,
            state=self.state,
            decided_by=self.decided_by,
            decided_at=self.decided_at,
            note=self.note,
            lifecycle=ComponentLifecycle.CREATE if self.pending else ComponentLifecycle.UPDATE,
        )

    def view(self) -> UiComponent:
        """``component()`` with its plain form, as a turn yields it."""
        rich = self.component()
        return UiComponent.of(rich, rich.summary())
