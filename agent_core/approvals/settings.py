"""Approval in ``threadline.toml``: ``[approvals]`` defaults and ``[tools.<name>]`` per tool.

::

    [approvals]
    expires_after = 900            # THREADLINE_APPROVAL_EXPIRES_AFTER: seconds a click may wait
    approvers = ["asker"]          # who approves when a tool's table does not say

    [tools.refund]
    approval = "always"            # never | always | ask_once (overrides the tool's own)
    approvers = ["asker", "finance"]
    expires_after = 600

A profile may override tools too (``[[profiles]]`` ... ``[profiles.approvals.refund]``).
The environment gives the tool tables as JSON: ``THREADLINE_TOOLS='{"refund": {...}}'``.

>>> ToolSettings(tools={"refund": {"approval": "always"}}).tools["refund"].approval
'always'
>>> ApprovalSettings(expires_after=60).policy(ToolSettings()).expires_after
60.0
"""

from __future__ import annotations

import json

from pydantic import Field, field_validator

from agent_core.approvals.policy import ASKER, DEFAULT_EXPIRY, ApprovalPolicy, ToolApproval
from agent_core.settings import CommaList, Section, env


class ApprovalSettings(Section):
    """``[approvals]``: how long an approval waits and who approves by default.

    >>> ApprovalSettings().approvers
    ['asker']
    """

    table = "approvals"

    expires_after: float = Field(
        DEFAULT_EXPIRY,
        gt=0,
        validation_alias=env("expires_after", "THREADLINE_APPROVAL_EXPIRES_AFTER"),
    )
    approvers: CommaList = Field(
        default_factory=lambda: [ASKER],
        validation_alias=env("approvers", "THREADLINE_APPROVERS"),
    )

    def policy(self, tools: ToolSettings) -> ApprovalPolicy:
        """The agents' ``ApprovalPolicy`` (``AgentConfig.approvals``)."""
        return ApprovalPolicy(
            expires_after=self.expires_after, approvers=self.approvers, tools=tools.tools
        )


class ToolSettings(Section):
    """``[tools.<name>]`` tables at the top level of the file: each a ``ToolApproval``.

    >>> ToolSettings(tools='{"refund": {"approvers": ["finance"]}}').tools["refund"].approvers
    ['finance']
    """

    tools: dict[str, ToolApproval] = Field(
        default_factory=dict, validation_alias=env("tools", "THREADLINE_TOOLS")
    )

    @field_validator("tools", mode="before")
    @classmethod
    def _json(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError as error:
                raise ValueError(f"THREADLINE_TOOLS is not valid JSON: {error}") from None
        return value
