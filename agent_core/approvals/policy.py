"""Which tool calls wait for approval, who may approve them, and for how long.

A tool says what it needs (``Tool.approval``: ``never``, ``always``, ``ask_once``;
``requires_approval = True`` is ``always``); the configuration may say otherwise per tool
(``[tools.<name>]``, and per profile) through an ``ApprovalPolicy``, which is part of
``AgentConfig``. Approvers are named in configuration only: ``"asker"`` (the person whose
question made the call; the default) or a Threadline group (``"admin"``, ``"data-leads"``),
checked against the clicker's groups as their signed payload resolves them at the click.

>>> from agent_core.users import User
>>> policy = ApprovalPolicy(tools={"refund": ToolApproval(approval="always",
...                                                       approvers=["asker", "finance"])})
>>> policy.approvers_of("refund")
['asker', 'finance']
>>> may_approve(User(id="bo", group_memberships=["finance"]), ["asker", "finance"], "ana")
True
>>> describe_approvers(["asker", "finance"], "Ana")
'Ana or anyone in finance'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_core.tool_contract import ApprovalMode
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.tool_contract import Tool

ASKER = "asker"
"""In ``approvers``: the person who asked."""
DEFAULT_EXPIRY = 15 * 60.0


def _approvers(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    cleaned = list(dict.fromkeys(item.strip() for item in value if item.strip()))
    if not cleaned:
        raise ValueError("approvers may not be empty (leave it out for the default: the asker)")
    return cleaned


class ToolApproval(BaseModel):
    """The configuration of one tool's approval: ``[tools.refund] approval = "always"``,
    ``approvers = ["asker", "finance"]``, ``expires_after = 600`` (each optional).

    >>> ToolApproval(approval="ask_once").approvers is None
    True
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    approval: ApprovalMode | None = None
    approvers: list[str] | None = None
    expires_after: float | None = Field(default=None, gt=0)

    @field_validator("approvers")
    @classmethod
    def _clean(cls, value: list[str] | None) -> list[str] | None:
        return _approvers(value)


class ApprovalPolicy(BaseModel):
    """Approval for every tool of an agent: defaults, then per-tool overrides.

    ``expires_after`` seconds a pending approval waits (15 minutes); ``approvers`` who may
    approve when a tool's configuration does not say (the asker); ``remember_for`` how long
    an ``ask_once`` approval is remembered in a thread (30 days).

    >>> ApprovalPolicy().expiry_of("anything")
    900.0
    """

    model_config = ConfigDict(defer_build=True)

    expires_after: float = Field(default=DEFAULT_EXPIRY, gt=0)
    approvers: list[str] = Field(default_factory=lambda: [ASKER])
    remember_for: float = Field(default=30 * 24 * 3600.0, gt=0)
    tools: dict[str, ToolApproval] = Field(default_factory=dict)

    @field_validator("approvers")
    @classmethod
    def _clean(cls, value: list[str]) -> list[str]:
        return _approvers(value) or [ASKER]

    def mode(self, tool: Tool[Any]) -> ApprovalMode:
        """The tool's approval mode: its configuration's, else its own."""
        configured = self.tools.get(tool.name)
        if configured is not None and configured.approval is not None:
            return configured.approval
        return tool.approval_mode

    def approvers_of(self, name: str) -> list[str]:
        configured = self.tools.get(name)
        if configured is not None and configured.approvers is not None:
            return list(configured.approvers)
        return list(self.approvers)

    def expiry_of(self, name: str) -> float:
        configured = self.tools.get(name)
        if configured is not None and configured.expires_after is not None:
            return float(configured.expires_after)
        return float(self.expires_after)

    def configured(self, configuration: ApprovalPolicy) -> ApprovalPolicy:
        """This (an agent's own) policy under ``configuration`` (``threadline.toml``): its
        defaults win, and its tools' tables, field by field.

        >>> own = ApprovalPolicy(tools={"refund": ToolApproval(approval="always")})
        >>> file = ApprovalPolicy(expires_after=60, tools={"refund": ToolApproval(
        ...     approvers=["finance"])})
        >>> mixed = own.configured(file)
        >>> mixed.expires_after, mixed.tools["refund"].approval, mixed.tools["refund"].approvers
        (60.0, 'always', ['finance'])
        """
        mixed = self.merged(configuration.tools)
        return mixed.model_copy(
            update={
                "expires_after": configuration.expires_after,
                "approvers": list(configuration.approvers),
            }
        )

    def merged(self, overrides: dict[str, ToolApproval]) -> ApprovalPolicy:
        """This policy with ``overrides`` (a profile's) applied per tool, field by field."""
        tools = dict(self.tools)
        for name, override in overrides.items():
            base = tools.get(name, ToolApproval())
            changes = override.model_dump(exclude_none=True)
            tools[name] = base.model_copy(update=changes)
        return self.model_copy(update={"tools": tools})


def may_approve(user: User, approvers: list[str], asker_id: str) -> bool:
    """Whether ``user`` (as resolved at the click) is one of ``approvers``."""
    if ASKER in approvers and user.id == asker_id:
        return True
    groups = [name for name in approvers if name != ASKER]
    return bool(groups) and not set(groups).isdisjoint(user.group_memberships)


def describe_approvers(approvers: list[str], asker_name: str) -> str:
    """Who may approve, in words, for the approval message ("only X may approve").

    >>> describe_approvers(["admin"], "Ana")
    'an admin'
    >>> describe_approvers(["asker", "admin", "finance"], "Ana")
    'Ana, an admin or anyone in finance'
    """
    parts = [asker_name] if ASKER in approvers else []
    parts += ["an admin" if name == "admin" else f"anyone in {name}" for name in approvers]
    parts = [part for part in parts if part != f"anyone in {ASKER}"]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]
