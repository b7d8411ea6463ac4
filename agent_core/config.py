"""Agent settings: ``AgentConfig``, group-gated ``UiFeatures`` and ``AuditConfig``."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agent_core.approvals.policy import ApprovalPolicy
from agent_core.components.base import Audience
from agent_core.users import User


class UiFeature(StrEnum):
    TOOL_NAMES = "tool_names"
    TOOL_ARGUMENTS = "tool_arguments"
    TOOL_ERROR = "tool_error"
    TOOL_INVOCATION_MESSAGE_IN_CHAT = "tool_invocation_message_in_chat"
    MEMORY_DETAILED_RESULTS = "memory_detailed_results"


DEFAULT_UI_FEATURES: dict[str, list[str]] = {
    UiFeature.TOOL_NAMES.value: ["admin", "user"],
    UiFeature.TOOL_ARGUMENTS.value: ["admin"],
    UiFeature.TOOL_ERROR.value: ["admin"],
    UiFeature.TOOL_INVOCATION_MESSAGE_IN_CHAT.value: ["admin"],
    UiFeature.MEMORY_DETAILED_RESULTS.value: ["admin"],
}


PRIVATE_BY_DEFAULT = frozenset(DEFAULT_UI_FEATURES) - {UiFeature.TOOL_NAMES.value}


class UiFeatures(BaseModel):
    """Which groups see which UI features; same set-intersection rule as tools.

    An empty group list opens a feature to everyone; an unknown feature is denied.
    Components that exist because of a *private* feature are delivered only to the asker
    (``UiComponent.audience == "requester"``): by default every feature except ``tool_names``,
    and any registered feature with a non-empty group list.

    >>> features = UiFeatures()
    >>> features.can_user_access_feature("tool_arguments", User(id="u", group_memberships=["user"]))
    False
    >>> features.register_feature("sql_preview", [])
    >>> features.can_user_access_feature("sql_preview", User(id="u"))
    True
    """

    model_config = ConfigDict(defer_build=True)

    feature_group_access: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_UI_FEATURES.items()}
    )
    private_features: set[str] = Field(default_factory=lambda: set(PRIVATE_BY_DEFAULT))
    _features_by_groups: dict[frozenset[str], frozenset[str]] = PrivateAttr(default_factory=dict)

    def can_user_access_feature(self, feature_name: str | UiFeature, user: User) -> bool:
        name = feature_name.value if isinstance(feature_name, UiFeature) else feature_name
        groups = self.feature_group_access.get(name)
        return groups is not None and user.is_member_of(groups)

    def audience_of(self, feature_name: str | UiFeature) -> Audience:
        """Who may see a component that exists because of this feature."""
        name = feature_name.value if isinstance(feature_name, UiFeature) else feature_name
        return "requester" if name in self.private_features else "everyone"

    def register_feature(
        self, name: str, access_groups: list[str], *, private: bool | None = None
    ) -> None:
        """Add or change a feature; ``private`` defaults to "restricted to some groups"."""
        self.feature_group_access[name] = list(access_groups)
        self._features_by_groups.clear()
        if private if private is not None else bool(access_groups):
            self.private_features.add(name)
        else:
            self.private_features.discard(name)

    def features_for(self, user: User) -> frozenset[str]:
        """Every feature ``user`` may access (cached per set of groups)."""
        groups = frozenset(user.group_memberships)
        # read past pydantic's attribute lookup for private attributes: once per turn
        known: dict[frozenset[str], frozenset[str]] = self.__pydantic_private__[  # type: ignore[index]
            "_features_by_groups"
        ]
        cached = known.get(groups)
        if cached is None:
            cached = frozenset(
                name
                for name, allowed in self.feature_group_access.items()
                if not allowed or not groups.isdisjoint(allowed)
            )
            known[groups] = cached
        return cached


class AuditConfig(BaseModel):
    """What the ``AuditLogger`` records."""

    model_config = ConfigDict(defer_build=True)

    enabled: bool = True
    log_tool_access_checks: bool = True
    log_tool_invocations: bool = True
    log_tool_results: bool = True
    log_ui_feature_checks: bool = False
    log_ai_responses: bool = True
    include_full_ai_responses: bool = False
    sanitize_tool_parameters: bool = True
    log_questions: bool = True
    """Each question, refusal and command answered without the model (who, where)."""
    include_question_text: bool = False
    """The question's own text in its record (off: only its length)."""


class AgentConfig(BaseModel):
    """How the agent behaves. ``AgentConfig(max_tool_iterations=5, temperature=0.2)``"""

    model_config = ConfigDict(defer_build=True)

    max_tool_iterations: int = Field(default=20, gt=0)
    stream_responses: bool = True
    auto_save_conversations: bool = True
    include_thinking_indicators: bool = True
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    allowed_groups: list[str] = Field(default_factory=list)
    """Who may ask at all (empty: everyone). Anyone else gets one refusal and nothing runs:
    no hook, no LLM call, no tool."""
    refusal: str = "Sorry, this assistant is not available to you here. Ask an admin for access."
    history_tokens: int | None = Field(default=100_000, gt=0)
    """The most history (in tokens, estimated) sent with each LLM call: past it, the oldest
    whole turns are left out (``agent_core.extensions.filters.TokenBudgetFilter``, after
    the agent's own ``conversation_filters``). ``None`` sends the whole history."""
    ui_features: UiFeatures = Field(default_factory=UiFeatures)
    audit_config: AuditConfig = Field(default_factory=AuditConfig)
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    """Which tool calls wait for a person's approval, who may approve, for how long
    (``agent_core.approvals``)."""
