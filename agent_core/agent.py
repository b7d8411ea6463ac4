"""``Agent``: wires the collaborators and drives a turn through its stages.

The turn reads like the spec's execution order::

    open_turn -> prepare -> think -> (act -> think)* -> finish
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from agent_core.acting import act, next_step
from agent_core.audit import AuditLogger
from agent_core.components import UiComponent
from agent_core.config import AgentConfig
from agent_core.context import ToolContext
from agent_core.conversations import ConversationStore, MemoryConversationStore
from agent_core.errors import AgentError
from agent_core.extensions.enhancer import DefaultLlmContextEnhancer, LlmContextEnhancer
from agent_core.extensions.enricher import ToolContextEnricher
from agent_core.extensions.filters import ConversationFilter
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.extensions.observability import ObservabilityProvider, Tracer
from agent_core.extensions.recovery import ErrorRecoveryStrategy
from agent_core.feedback import Feedback
from agent_core.llm.base import LlmService
from agent_core.memory.base import AgentMemory
from agent_core.prompts import DefaultSystemPromptBuilder, SystemPromptBuilder
from agent_core.stages import fail, finish, open_turn, prepare, settle_after_stop
from agent_core.thinking import think
from agent_core.tools.base import ToolSchema
from agent_core.tools.registry import ToolRegistry
from agent_core.turn import TurnState
from agent_core.users import RequestContext, User, UserResolver
from agent_core.workflow import DefaultWorkflowHandler, WorkflowHandler

logger = logging.getLogger("threadline.agent")


class Agent:
    """The agent: an LLM, tools, memory and seven extension points behind one call.

    >>> import asyncio
    >>> from agent_core import (Agent, InMemoryAgentMemory, RequestContext, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["Hello!"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u1", group_memberships=["user"])),
    ...               agent_memory=InMemoryAgentMemory())
    >>> async def ask():
    ...     return [c async for c in agent.send_message(RequestContext(), "hi")]
    >>> texts = [c.rich_component for c in asyncio.run(ask()) if c.rich_component.type == "text"]
    >>> texts[-1].content
    'Hello!'
    """

    def __init__(
        self,
        *,
        llm_service: LlmService,
        tool_registry: ToolRegistry,
        user_resolver: UserResolver,
        agent_memory: AgentMemory,
        conversation_store: ConversationStore | None = None,
        config: AgentConfig | None = None,
        system_prompt_builder: SystemPromptBuilder | None = None,
        lifecycle_hooks: Sequence[LifecycleHook] = (),
        llm_middlewares: Sequence[LlmMiddleware] = (),
        workflow_handler: WorkflowHandler | None = None,
        error_recovery_strategy: ErrorRecoveryStrategy | None = None,
        context_enrichers: Sequence[ToolContextEnricher] = (),
        llm_context_enhancer: LlmContextEnhancer | None = None,
        conversation_filters: Sequence[ConversationFilter] = (),
        observability_provider: ObservabilityProvider | None = None,
        audit_logger: AuditLogger | None = None,
    ) -> None:
        self.llm_service = llm_service
        self.tool_registry = tool_registry
        self.user_resolver = user_resolver
        self.agent_memory = agent_memory
        self.conversation_store = conversation_store or MemoryConversationStore()
        self.config = config or AgentConfig()
        self.system_prompt_builder = system_prompt_builder or DefaultSystemPromptBuilder()
        self.lifecycle_hooks = list(lifecycle_hooks)
        self.llm_middlewares = list(llm_middlewares)
        self.workflow_handler = workflow_handler or DefaultWorkflowHandler()
        self.error_recovery_strategy = error_recovery_strategy
        self.context_enrichers = list(context_enrichers)
        self.llm_context_enhancer = llm_context_enhancer or DefaultLlmContextEnhancer(agent_memory)
        self.conversation_filters = list(conversation_filters)
        self.observability_provider = observability_provider
        self.audit_logger = audit_logger
        self.tracer = Tracer(observability_provider)
        self._tool_problems: dict[frozenset[str], list[str]] = {}
        if audit_logger is not None and self.config.audit_config.enabled:
            tool_registry.audit_logger = audit_logger
            tool_registry.audit_config = self.config.audit_config

    async def send_message(
        self,
        request_context: RequestContext,
        message: str,
        *,
        conversation_id: str | None = None,
    ) -> AsyncIterator[UiComponent]:
        """Answer ``message``, yielding components as soon as each exists.

        Errors end the turn with an error card (nothing of the turn is saved); cancelling
        the consuming task (the user's Stop) saves a consistent, annotated partial turn.
        """
        state = TurnState.start(request_context, message, conversation_id)
        async with self.tracer.span(
            "agent.send_message", metric="agent.message.duration",
            tag_attributes=("user_id", "hit_tool_limit"),
        ) as span:
            try:
                async with contextlib.aclosing(self._run_turn(state)) as turn:
                    async for component in turn:
                        yield component
            except (asyncio.CancelledError, GeneratorExit):
                await settle_after_stop(self, state)
                raise
            except Exception as error:
                async for component in fail(self, state, error):
                    yield component
            finally:
                span.set_attribute("user_id", state.user.id if state.user else None)
                span.set_attribute("conversation_id", state.conversation_id)
                span.set_attribute("tool_iterations", state.tool_iterations)
                span.set_attribute("hit_tool_limit", state.hit_tool_limit)

    async def _run_turn(self, state: TurnState) -> AsyncGenerator[UiComponent, None]:
        async for component in open_turn(self, state):
            yield component
        if state.finished:
            return
        await prepare(self, state)
        while True:
            async for component in think(self, state):
                yield component
            if next_step(self, state) == "finish":
                break
            async for component in act(self, state):
                yield component
        for component in await finish(self, state):
            yield component

    async def check_tools(self, schemas: list[ToolSchema]) -> None:
        """Ask the LLM service to validate each distinct tool set once; refuse bad ones."""
        key = frozenset(s.name for s in schemas)
        if key not in self._tool_problems:
            self._tool_problems[key] = await self.llm_service.validate_tools(schemas)
        if problems := self._tool_problems[key]:
            raise AgentError("The tool configuration was rejected: " + "; ".join(problems))

    def tool_context(
        self,
        user: User,
        *,
        conversation_id: str,
        request_id: str,
        request: Mapping[str, Any],
        question: str = "",
    ) -> ToolContext:
        """The ``ToolContext`` of one request: who asks, where (the channel's metadata), and
        the UI features they have. Tools, memory and the context enhancer read it."""
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

    async def record_feedback(self, request_context: RequestContext, feedback: Feedback) -> None:
        """Record a user's rating of an answer: audit event, ``on_feedback`` hooks, and the
        verdict on the memories its turn made (a thumbs-up by the asker or an admin offers
        them to the workspace; a thumbs-down stops them being suggested)."""
        user = await self.user_resolver.resolve_user(request_context)
        if self.audit_logger is not None and self.config.audit_config.enabled:
            await self.audit_logger.log_feedback(user, feedback, request_id="feedback")
        for hook in self.lifecycle_hooks:
            await hook.on_feedback(user, feedback)
        if feedback.turn_id:
            context = self.tool_context(
                user, conversation_id=feedback.conversation_id, request_id="feedback",
                request=request_context.metadata,
            )  # fmt: skip
            rated = await self.agent_memory.rate_turn(
                context, feedback.turn_id, good=feedback.positive
            )
            logger.info("feedback on turn %s rated %d memories", feedback.turn_id, rated)
