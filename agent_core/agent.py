"""``Agent``: wires the collaborators and drives a turn through its stages.

The turn reads like the spec's execution order::

    open_turn -> prepare -> think -> (act -> think)* -> finish

The stages (``agent_core.turn``) never see the ``Agent``: they are given its ``TurnDeps``,
built once here. The agent's collaborators stay its public attributes; each reads the
``TurnDeps``, and assigning one gives the agent a new ``TurnDeps`` for its next turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from agent_core.approvals.book import ApprovalBook
from agent_core.components import UiComponent
from agent_core.config import AgentConfig
from agent_core.context import ToolContext
from agent_core.conversations import ConversationStore, MemoryConversationStore
from agent_core.extensions.enhancer import DefaultLlmContextEnhancer, LlmContextEnhancer
from agent_core.extensions.enricher import ToolContextEnricher
from agent_core.extensions.filters import ConversationFilter
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.extensions.recovery import ErrorRecoveryStrategy, default_recovery_strategy
from agent_core.feedback import Feedback
from agent_core.llm.base import LlmService
from agent_core.memory.base import AgentMemory
from agent_core.observability import ObservabilityProvider, Tracer
from agent_core.prompts import DefaultSystemPromptBuilder, SystemPromptBuilder
from agent_core.tools.registry import ToolRegistry
from agent_core.turn import (
    TurnDeps,
    TurnState,
    act,
    fail,
    finish,
    next_step,
    open_turn,
    prepare,
    settle_after_stop,
    think,
)
from agent_core.turn.deciding import ApprovalAnswer, cancel, decide, expire_due
from agent_core.turn.resuming import Resume, open_resumed, settle_cancelled
from agent_core.users import RequestContext, StaticUserResolver, User, UserResolver
from agent_core.workflow import DefaultWorkflowHandler, WorkflowHandler

if TYPE_CHECKING:
    from agent_core.audit import AuditLogger
    from agent_core.state.turn_writes import TurnWrites

logger = logging.getLogger("threadline.agent")

if TYPE_CHECKING:
    LOCAL_USER: User
    """Who asks an agent given no user resolver, outside any channel."""


@functools.cache
def _local_user() -> User:
    return User(id="local", username="you", group_memberships=["user"])


def __getattr__(name: str) -> Any:
    if name == "LOCAL_USER":  # built on first use: no model is built while importing
        return _local_user()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


T = TypeVar("T")


class _InDeps(Generic[T]):
    """An ``Agent`` attribute kept in its frozen ``TurnDeps`` under the same name."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type[Agent], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, agent: None, owner: type[Agent]) -> _InDeps[T]: ...

    @overload
    def __get__(self, agent: Agent, owner: type[Agent]) -> T: ...

    def __get__(self, agent: Agent | None, owner: type[Agent]) -> T | _InDeps[T]:
        if agent is None:
            return self
        value: T = getattr(agent.deps, self.name)
        return value

    def __set__(self, agent: Agent, value: T) -> None:
        change: dict[str, Any] = {self.name: value}
        agent.deps = dataclasses.replace(agent.deps, **change)


def _in_memory() -> AgentMemory:
    """The memory of an agent given none: in this process (loaded only then)."""
    from agent_core.memory.in_memory import InMemoryAgentMemory

    return InMemoryAgentMemory()


class Agent:
    """The agent: an LLM, tools, memory and seven extension points behind one call.

    Without an ``error_recovery_strategy`` an LLM call that fails transiently (429, 529, 5xx,
    a timeout, a dropped connection) is retried with jittered backoff, honouring Retry-After
    (``default_recovery_strategy``); a strategy you give is in charge instead.

    ``user_resolver``, ``agent_memory`` and ``conversation_store`` may be left out: outside a
    channel every request is then ``LOCAL_USER``'s and memory and conversations live in this
    process; a channel serving the agent (``threadline slack --app ...``) gives it the
    workspace's identity and durable state instead (``left_to_channel`` names them).

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

    llm_service = _InDeps[LlmService]()
    tool_registry = _InDeps[ToolRegistry]()
    user_resolver = _InDeps[UserResolver]()
    agent_memory = _InDeps[AgentMemory]()
    conversation_store = _InDeps[ConversationStore]()
    config = _InDeps[AgentConfig]()
    system_prompt_builder = _InDeps[SystemPromptBuilder]()
    lifecycle_hooks = _InDeps[list[LifecycleHook]]()
    llm_middlewares = _InDeps[list[LlmMiddleware]]()
    workflow_handler = _InDeps[WorkflowHandler]()
    error_recovery_strategy = _InDeps[ErrorRecoveryStrategy | None]()
    context_enrichers = _InDeps[list[ToolContextEnricher]]()
    llm_context_enhancer = _InDeps[LlmContextEnhancer | None]()
    conversation_filters = _InDeps[list[ConversationFilter]]()
    observability_provider = _InDeps[ObservabilityProvider | None]()
    audit_logger = _InDeps["AuditLogger | None"]()
    approval_book = _InDeps[ApprovalBook]()

    def __init__(
        self,
        *,
        llm_service: LlmService,
        tool_registry: ToolRegistry,
        user_resolver: UserResolver | None = None,
        agent_memory: AgentMemory | None = None,
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
        approval_book: ApprovalBook | None = None,
    ) -> None:
        given = {
            "user_resolver": user_resolver,
            "agent_memory": agent_memory,
            "conversation_store": conversation_store,
            "approval_book": approval_book,
        }
        self.left_to_channel = frozenset(name for name, part in given.items() if part is None)
        """The parts this agent did not bring: a channel serving it provides its own
        (workspace identity, durable memory and conversations; ``Runtime``)."""
        self.deps = TurnDeps(
            agent=self,
            llm_service=llm_service,
            tool_registry=tool_registry,
            user_resolver=user_resolver or StaticUserResolver(_local_user()),
            agent_memory=agent_memory or _in_memory(),
            conversation_store=conversation_store or MemoryConversationStore(),
            config=config or AgentConfig(),
            system_prompt_builder=system_prompt_builder or DefaultSystemPromptBuilder(),
            lifecycle_hooks=list(lifecycle_hooks),
            llm_middlewares=list(llm_middlewares),
            workflow_handler=workflow_handler or DefaultWorkflowHandler(),
            error_recovery_strategy=default_recovery_strategy()
            if error_recovery_strategy is None
            else error_recovery_strategy,
            context_enrichers=list(context_enrichers),
            llm_context_enhancer=llm_context_enhancer or DefaultLlmContextEnhancer(),
            conversation_filters=list(conversation_filters),
            observability_provider=observability_provider,
            audit_logger=audit_logger,
            approval_book=approval_book or ApprovalBook(),
        )
        if audit_logger is not None and self.config.audit_config.enabled:
            tool_registry.audit_logger = audit_logger
            tool_registry.audit_config = self.config.audit_config

    def served_agents(self) -> list[Agent]:
        """The agents a command serves for this one (itself; a profile router has several)."""
        return [self]

    @property
    def tracer(self) -> Tracer:
        return self.deps.tracer

    async def send_message(
        self,
        request_context: RequestContext,
        message: str | Resume,
        *,
        conversation_id: str | None = None,
        writes: TurnWrites | None = None,
    ) -> AsyncIterator[UiComponent]:
        """Answer ``message``, yielding components as soon as each exists; or, given a
        ``Resume``, continue the turn that waited for its approval, now decided: approved
        calls run (once, whoever resumes), others are answered "not run" and the model goes
        on; a Stop ends the turn. A resume is the asker's turn as they asked it (its
        request, conversation and question are the approval's: ``request_context`` and
        ``conversation_id`` are not read), and yields nothing for an unknown or still
        pending approval.

        Errors end the turn with an error card (nothing of the turn is saved); cancelling
        the consuming task (the user's Stop) saves a consistent, annotated partial turn.
        ``writes``: the queued turn's writes, when a worker runs one (``TurnDeps.for_turn``).
        """
        deps = self.deps.for_turn(writes)
        if isinstance(message, Resume):
            record = await deps.approval_book.get(message.approval_id)
            if record is None or record.pending:
                return
            state, run = TurnState.resumed(record), self._run_resumed
        else:
            state, run = TurnState.start(request_context, message, conversation_id), self._run_turn
        async with contextlib.aclosing(self._traced(deps, run, state)) as turn:
            async for component in turn:
                yield component

    async def _traced(
        self,
        deps: TurnDeps,
        run: Callable[[TurnDeps, TurnState], AsyncGenerator[UiComponent, None]],
        state: TurnState,
    ) -> AsyncGenerator[UiComponent, None]:
        """One turn (asked or resumed), traced; an error becomes an error card, a Stop
        settles what the turn did."""
        async with deps.tracer.span(
            "agent.send_message",
            metric="agent.message.duration",
            tag_attributes=("user_id", "hit_tool_limit"),
        ) as span:
            try:
                async with contextlib.aclosing(run(deps, state)) as turn:
                    async for component in turn:
                        yield component
            except (asyncio.CancelledError, GeneratorExit):
                await settle_after_stop(deps, state)
                raise
            except Exception as error:
                async for component in fail(deps, state, error):
                    yield component
            finally:
                span.set_attribute("user_id", state.user.id if state.user else None)
                span.set_attribute("conversation_id", state.conversation_id)
                span.set_attribute("tool_iterations", state.tool_iterations)
                span.set_attribute("hit_tool_limit", state.hit_tool_limit)

    async def _run_turn(
        self, deps: TurnDeps, state: TurnState
    ) -> AsyncGenerator[UiComponent, None]:
        async for component in open_turn(deps, state):
            yield component
        if state.finished:
            return
        for component in await prepare(deps, state):
            yield component
        async for component in self._rounds(deps, state, acting=False):
            yield component
        for component in await finish(deps, state):
            yield component

    async def _rounds(
        self, deps: TurnDeps, state: TurnState, *, acting: bool
    ) -> AsyncGenerator[UiComponent, None]:
        """(think -> act)* until the model answers, the tool limit, or an approval to wait
        for; ``acting``: start with ``act`` (a resumed turn's waiting round)."""
        while True:
            if not acting:
                async for component in think(deps, state):
                    yield component
                if next_step(deps, state) == "finish":
                    return
            acting = False
            async for component in act(deps, state):
                yield component
            if state.awaiting is not None:
                return

    # --- approval ---------------------------------------------------------------------------

    async def decide_approval(
        self,
        request_context: RequestContext,
        approval_id: str,
        *,
        approve: bool,
        conversation_id: str | None,
    ) -> ApprovalAnswer:
        """A click on Approve or Deny, by the person of ``request_context`` (resolved from
        their signed payload now), in ``conversation_id`` (None: from their home). When
        ``answer.resume`` is True, this call decided: resume the turn (``send_message`` with
        a ``Resume``), on any process."""
        return await decide(
            self.deps,
            request_context,
            approval_id,
            approve=approve,
            conversation_id=conversation_id,
        )

    async def cancel_approval(
        self, request_context: RequestContext, approval_id: str, *, conversation_id: str
    ) -> ApprovalAnswer:
        """The asker's Stop while their turn waits for approval (then its ``Resume`` ends
        the turn consistently)."""
        return await cancel(
            self.deps, request_context, approval_id, conversation_id=conversation_id
        )

    async def expire_approvals(self, platform: str | None = None) -> list[ApprovalAnswer]:
        """Expire every pending approval asked in ``platform`` (the channel's
        ``metadata["platform"]``; None: asked without one) whose time is up: a channel's
        periodic sweep. Each answer is to be resumed (an expiry is a denial that says so)."""
        return await expire_due(self.deps, platform)

    async def _run_resumed(
        self, deps: TurnDeps, state: TurnState
    ) -> AsyncGenerator[UiComponent, None]:
        async for component in open_resumed(deps, state):
            yield component
        if state.finished:
            return
        await prepare(deps, state)
        if state.approval is not None and state.approval.state == "cancelled":
            for component in await settle_cancelled(deps, state):
                yield component
            return
        async for component in self._rounds(deps, state, acting=True):
            yield component
        for component in await finish(deps, state):
            yield component

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
        return self.deps.tool_context(
            user,
            conversation_id=conversation_id,
            request_id=request_id,
            request=request,
            question=question,
        )

    async def may_see(self, request_context: RequestContext, feature: str) -> bool:
        """Whether the person of ``request_context`` (resolved now, as for a turn) may see
        UI ``feature`` here: a click asking for admin-only detail after the turn (Slack's
        "Show query") is checked with the clicker's own groups, never the asker's."""
        user = await self.user_resolver.resolve_user(request_context)
        allowed = self.config.allowed_groups
        if allowed and not user.is_member_of(allowed):
            return False
        return self.config.ui_features.can_user_access_feature(feature, user)

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
                user,
                conversation_id=feedback.conversation_id,
                request_id="feedback",
                request=request_context.metadata,
            )
            rated = await self.agent_memory.rate_turn(
                context, feedback.turn_id, good=feedback.positive
            )
            logger.info("feedback on turn %s rated %d memories", feedback.turn_id, rated)
