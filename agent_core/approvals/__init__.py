"""Approval in the thread: tool calls that wait for the right person's click.

``policy`` (which tools wait, who may approve, how long: ``ApprovalPolicy``, part of
``AgentConfig``; ``ToolApproval`` per tool), ``record`` (one pending approval as the state
store keeps it), ``book`` (``ApprovalBook``: the store, decided exactly once), ``settings``
(``[tools.<name>]`` in ``threadline.toml``). The turn's side, above this package, is
``agent_core.turn.approving`` (holding a round, applying the decision),
``agent_core.turn.deciding`` (a click, a Stop, the clock: ``ApprovalAnswer``) and
``agent_core.turn.resuming``; the agent's API is ``Agent.decide_approval``,
``cancel_approval``, ``expire_approvals``, then ``send_message(context, Resume(approval_id))``.
``docs/agent-contract.md`` describes the states.
"""

from agent_core.approvals.book import ApprovalBook
from agent_core.approvals.policy import ASKER, ApprovalPolicy, ToolApproval
from agent_core.approvals.record import ApprovalRecord, HeldCall
from agent_core.tool_contract import ApprovalMode

__all__ = [
    "ASKER",
    "ApprovalBook",
    "ApprovalMode",
    "ApprovalPolicy",
    "ApprovalRecord",
    "HeldCall",
    "ToolApproval",
]
