"""``TurnDeps``: the agent's collaborators and configuration, as every stage receives them.

A stage is ``stage(deps, state)``: ``TurnDeps`` holds what does not change during a turn
(frozen), ``TurnState`` what does. The ``Agent`` builds its ``TurnDeps`` once, and each turn
a queue worker runs is handed them bound to that turn's writes (``for_turn``: on Redis its
conversation store, memory, resolver, approval book and quota read what the turn's start
read and stage its commit; ``agent_core.state.turn_writes``); the stages never see the
``Agent`` itself.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_core.config import AgentConfig
from agent_core.context import ToolContext
from agent_core.conversations import ConversationStore
from agent_core.errors import AgentError
from agent_core.extensions.enhancer import LlmContextEnhancer
from agent_core.extensions.enricher import ToolContextEnricher
from agent_core.extensions.filters import ConversationFilter, TokenBudgetFilter
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.extensions.recovery import ErrorRecoveryStrategy
from agent_core.llm.base import LlmService
from agent_core.memory.base import AgentMemory
from agent_core.observability import ObservabilityProvider, Tracer
from agent_core.prompts import SystemPromptBuilder
from agent_core.tool_contract import ToolSchema
from agent_core.tools.registry import ToolRegistry
from agent_core.users import User, UserResolver
from agent_core.workflow import WorkflowAgent, WorkflowHandler

if TYPE_CHECKING:
    from agent_core.approvals.book import ApprovalBook
    from agent_core.audit import AuditLogger
    from agent_core.state.turn_writes import TurnWrites


@dataclass(frozen=True, kw_only=True, eq=False)
class TurnDeps:
    """Everything a turn's stages use besides the turn's own state; built once per agent.

    The extension lists are the agent's own lists (a hook appended to
    ``agent.lifecycle_hooks`` runs from the next turn on); assigning one of the agent's
    attributes gives the agent a new ``TurnDeps``. ``tracer`` follows
    ``observability_provider``; ``tool_problems`` remembers the LLM service's verdict on each
    tool set, so each is validated once.

    >>> from agent_core import (Agent, InMemoryAgentMemory, InMemoryAuditLogger,
    ...                         ScriptedLlmService, StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["Hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u1")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> agent.deps.llm_service is agent.llm_service, agent.deps.audit_logger
    (True, None)
    >>> agent.audit_logger = InMemoryAuditLogger()
    >>> agent.deps.audit_logger is agent.audit_logger
    True
    """

    agent: WorkflowAgent
    """The agent these belong to: the workflow handler is handed it (the spec's contract)."""
    llm_service: LlmService
    tool_registry: ToolRegistry
    user_resolver: UserResolver
    agent_memory: AgentMemory
    conversation_store: ConversationStore
    config: AgentConfig
    system_prompt_builder: SystemPromptBuilder
    lifecycle_hooks: list[LifecycleHook] = field(default_factory=list)
    llm_middlewares: list[LlmMiddleware] = field(default_factory=list)
    workflow_handler: WorkflowHandler
    error_recovery_strategy: ErrorRecoveryStrategy | None = None
    context_enrichers: list[ToolContextEnricher] = field(default_factory=list)
    llm_context_enhancer: LlmContextEnhancer | None = None
    conversation_filters: list[ConversationFilter] = field(default_factory=list)
    observability_provider: ObservabilityProvider | None = None
    audit_logger: AuditLogger | None = None
    approval_book: ApprovalBook
    """Pending approvals (``agent_core.approvals``): the channel's state store when served."""
    tracer: Tracer = field(init=False)
    tool_problems: dict[frozenset[str], list[str]] = field(init=False, default_factory=dict)
    _budgets: dict[int, TokenBudgetFilter] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tracer", Tracer(self.observability_provider))

    def for_turn(self, writes: TurnWrites | None) -> TurnDeps:
        """These, as the running turn whose writes are ``writes`` uses them: the stores,
        the resolver, the approval book and the lifecycle hooks (a quota's) are their
        ``for_turn(writes)`` views (the rest, caches included, is shared); these themselves
        for no writes."""
        if writes is None:
            return self
        view = copy.copy(self)
        for name in ("conversation_store", "agent_memory", "user_resolver", "approval_book"):
            object.__setattr__(view, name, getattr(self, name).for_turn(writes))
        hooks = [hook.for_turn(writes) for hook in self.lifecycle_hooks]
        object.__setattr__(view, "lifecycle_hooks", hooks)
        return view

    def history_budget(self) -> TokenBudgetFilter | None:
        """The filter that keeps each LLM call within ``config.history_tokens``."""
        tokens = self.config.history_tokens
        if tokens is None:
            return None
        budget = self._budgets.get(tokens)
        if budget is None:
            budget = self._budgets[tokens] = TokenBudgetFilter(tokens)
        return budget

    async def check_tools(self, schemas: list[ToolSchema]) -> None:
        """Ask the LLM service to validate each distinct tool set once; refuse bad ones."""
        key = frozenset(s.name for s in schemas)
        if key not in self.tool_problems:
            self.tool_problems[key] = await self.llm_service.validate_tools(schemas)
        if problems := self.tool_problems[key]:
            raise AgentError("The tool configuration was rejected: " + "; ".join(problems))

    def tool_context(
        self,
        user: User,
        *,
        conversation_id: str,
        request_id: str,
        request: Mapping[str, Any],
        question: str = "",
        features: frozenset[str] | None = None,
    ) -> ToolContext:
        """The ``ToolContext`` of one request: who asks, where (the channel's metadata), and
        the UI features they have (``features``, when the turn already knows them). Tools,
        memory and the context enhancer read it."""
        if features is None:
            features = self.config.ui_features.features_for(user)
        return ToolContext(
            user=user,
            conversation_id=conversation_id,
            request_id=request_id,
            agent_memory=self.agent_memory,
            observability_provider=self.observability_provider,
            metadata={"ui_features_available": sorted(features), "request": dict(request)},
            question=question,
        )
