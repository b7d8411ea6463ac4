"""``ApprovalComponent``: a tool call waiting for a person's decision, and what became of it.

The agent yields one when a turn pauses for approval (``agent_core.approvals``); the
decision, an expiry or a Stop yields a newer version of it (same ``approval_id``). Channels
draw it natively: Approve / Deny buttons while it is ``pending``, who decided and when
after. Everything in it that came from the model (the arguments) or from people (names)
is data: renderers escape it.

>>> view = ApprovalComponent(approval_id="a1", calls=[ApprovalCallView(tool="refund",
...                          arguments={"order": 42})], asker="Ana", approvers="Ana")
>>> view.pending, view.summary()
(True, 'Ana asks to run refund. Only Ana may approve.')
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.components.base import ComponentType, RichComponent

ApprovalState = Literal["pending", "approved", "denied", "expired", "cancelled"]
"""Where an approval stands: waiting, or how it ended (``cancelled``: the asker's Stop)."""


class ApprovalCallView(BaseModel):
    """One tool call as people see it before deciding: the tool and its validated
    arguments."""

    model_config = ConfigDict(defer_build=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def arguments_text(self, limit: int = 2000) -> str:
        """The arguments as indented JSON, cut to ``limit`` characters (with a note).

        >>> ApprovalCallView(tool="t", arguments={"a": "x" * 50}).arguments_text(30)
        '{\\n  "a": "xxxxxxxxxxxxxx…(cut)'
        """
        text = json.dumps(self.arguments, indent=2, ensure_ascii=False, default=str)
        return text if len(text) <= limit else text[: max(0, limit - 6)] + "…(cut)"


_ENDED: dict[ApprovalState, str] = {
    "approved": "Approved",
    "denied": "Denied",
    "expired": "Expired",
    "cancelled": "Stopped",
}


class ApprovalComponent(RichComponent):
    """A pending approval, or its outcome; see the module docstring.

    >>> ApprovalComponent(approval_id="a1", calls=[], asker="Ana", approvers="Ana",
    ...                   state="approved", decided_by="Bo").outcome()
    'Approved by Bo'
    """

    type: ComponentType = ComponentType.APPROVAL
    interactive: bool = True
    approval_id: str
    calls: list[ApprovalCallView]
    asker: str
    """Who asked (their name as the channel knows it)."""
    approvers: str
    """Who may approve, in words ("Ana", "Ana or anyone in data-leads")."""
    expires_at: float | None = None
    state: ApprovalState = "pending"
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None
    """Why it ended, when the state alone does not say (an expiry, a newer question)."""

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    def tools(self) -> str:
        """The tools, once each, in call order: ``refund, notify``."""
        return ", ".join(dict.fromkeys(call.tool for call in self.calls))

    def outcome(self) -> str:
        """The decision in words (empty while pending): "Approved by Bo"."""
        if self.pending:
            return ""
        word = _ENDED[self.state]
        by = f" by {self.decided_by}" if self.decided_by else ""
        return f"{word}{by}" + (f": {self.note}" if self.note else "")

    def summary(self) -> str:
        """One plain line for notifications and plain channels."""
        if self.pending:
            return f"{self.asker} asks to run {self.tools()}. Only {self.approvers} may approve."
        return f"{self.tools()}: {self.outcome()}."
