"""Approval in the thread: tool calls that wait for the right person's click.

``policy`` (which tools wait, who may approve, how long: ``ApprovalPolicy``, part of
``AgentConfig``; ``ToolApproval`` per tool), ``record`` (one pending approval as the state
store keeps it), ``book`` (``ApprovalBook``: the store, decided exactly once), ``decisions``
(a click, a Stop, the clock: ``ApprovalAnswer``), ``settings`` (``[tools.<name>]`` in
``threadline.toml``). The turn's side is ``agent_core.turn.approving`` (holding a round,
applying the decision) and ``agent_core.turn.resuming``; the agent's API is
``Agent.decide_approval``, ``cancel_approval``, ``expire_approvals``, then
``send_message(context, Resume(approval_id))``. ``docs/agent-contract.md`` describes the states.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "agent_core.approvals.book": ("ApprovalBook",),
    "agent_core.approvals.decisions": ("ApprovalAnswer",),
    "agent_core.approvals.policy": ("ASKER", "ApprovalPolicy", "ToolApproval"),
    "agent_core.approvals.record": ("ApprovalRecord", "HeldCall"),
    "agent_core.tools.base": ("ApprovalMode",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ASKER",
    "ApprovalAnswer",
    "ApprovalBook",
    "ApprovalMode",
    "ApprovalPolicy",
    "ApprovalRecord",
    "HeldCall",
    "ToolApproval",
]


def __getattr__(name: str) -> Any:
    # names load on first use: ``AgentConfig`` imports ``policy`` without the turn's stages
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.approvals' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from agent_core.approvals.book import ApprovalBook
    from agent_core.approvals.decisions import ApprovalAnswer
    from agent_core.approvals.policy import ASKER, ApprovalPolicy, ToolApproval
    from agent_core.approvals.record import ApprovalRecord, HeldCall
    from agent_core.tools.base import ApprovalMode
