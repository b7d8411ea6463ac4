"""``GraphAgent``: the same agent, its turn run as a LangGraph ``StateGraph``.

It is an ``Agent`` (same constructor, plus ``checkpointer=``; same ``send_message``) whose
``_run_turn`` runs ``agent_core.graph.turn``'s graph in a background task. The nodes are the
plain agent's stages, so both agents change together; errors and Stop are handled by the
inherited ``send_message`` exactly as for ``Agent`` (``fail``, ``settle_after_stop``).

LangGraph is the optional extra ``threadline[graph]``: this module imports it only when a
``GraphAgent`` is built.
"""

from __future__ import annotations

import asyncio
import importlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from agent_core.agent import Agent
from agent_core.components import StatusBarUpdateComponent, UiComponent
from agent_core.conversations import Message
from agent_core.graph.approval import (
    ApprovalDecision,
    ApprovalRequest,
    RefusalReason,
    approval_components,
    decision_message,
    parse_decision,
    refusal,
)
from agent_core.graph.handoff import Handoff
from agent_core.graph.state import TurnSnapshot
from agent_core.turn import TurnDeps, TurnState
from agent_core.users import RequestContext, User

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.types import StateSnapshot

    from agent_core.graph.turn import TurnGraph

MISSING_EXTRA = "GraphAgent needs LangGraph: pip install 'threadline[graph]'"


def _graph_module() -> ModuleType:
    try:
        return importlib.import_module("agent_core.graph.turn")
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] in {"langgraph", "langchain_core"}:
            raise ImportError(MISSING_EXTRA) from missing
        raise


class _Resumable(NamedTuple):
    turn: TurnSnapshot
    history: list[Message]


class PendingApproval(BaseModel):
    """A paused turn's open question: answer with ``/approve <id>`` or ``/deny <id>``."""

    id: str
    request: ApprovalRequest


class TurnCheckpoint(BaseModel):
    """The last checkpointed state of a conversation's turn (``GraphAgent.get_state``).

    ``next_nodes`` is empty when the turn ended, ``("tools",)`` while it waits for approval.
    """

    turn: TurnSnapshot | None
    next_nodes: list[str]
    pending_approval: PendingApproval | None = None
    checkpoint_id: str | None = None


class GraphAgent(Agent):
    """An ``Agent`` whose turn is a LangGraph graph, with checkpoints and tool approval.

    Pass ``checkpointer=`` (``InMemorySaver()`` or any LangGraph checkpointer) to checkpoint
    every step under the conversation id (``get_state``) and to let tools with
    ``requires_approval = True`` pause the turn until the asker answers: the turn ends with
    Approve / Deny buttons whose actions are the messages ``/approve <id>`` and
    ``/deny <id>``; ``send_message`` (or ``resume``) with one of them continues the paused
    turn. Only the asker can answer, and only while the turn is the conversation's latest:
    a newer turn in the same thread (by anyone: the thread is the checkpoint key) ends it.

    >>> import asyncio
    >>> from agent_core import (InMemoryAgentMemory, RequestContext, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = GraphAgent(llm_service=ScriptedLlmService(["Hello!"]),
    ...                    tool_registry=ToolRegistry(), agent_memory=InMemoryAgentMemory(),
    ...                    user_resolver=StaticUserResolver(User(id="u1")))
    >>> async def ask():
    ...     return [c async for c in agent.send_message(RequestContext(), "hi")]
    >>> texts = [c.rich_component for c in asyncio.run(ask()) if c.rich_component.type == "text"]
    >>> texts[-1].content
    'Hello!'
    """

    def __init__(
        self, *, checkpointer: BaseCheckpointSaver[Any] | None = None, **agent_options: Any
    ) -> None:
        turn_graph = _graph_module()
        super().__init__(**agent_options)
        self.checkpointer = checkpointer
        self.graph: TurnGraph = turn_graph.build_turn_graph(checkpointer)
        self._turn_graph = turn_graph
        self._resuming: set[str] = set()

    async def _run_turn(
        self, deps: TurnDeps, state: TurnState
    ) -> AsyncGenerator[UiComponent, None]:
        decision = parse_decision(state.message) if self.checkpointer is not None else None
        if decision is not None:
            turn = self._resume_turn(deps, state, decision)
        else:
            if self.checkpointer is not None and state.conversation_id is None:
                state.conversation_id = str(uuid.uuid4())  # the thread id is needed up front
            turn = self._drive(deps, state, {})
        async with aclosing(turn):  # a reader closing early closes the graph run too
            async for component in turn:
                yield component

    async def _drive(
        self, deps: TurnDeps, state: TurnState, start: Any
    ) -> AsyncGenerator[UiComponent]:
        """Run the graph in a task and pass its components on as they happen."""
        handoff = Handoff()
        run = self._turn_graph.GraphRun(deps, state, handoff, self.checkpointer is not None)
        config = self._turn_graph.run_config(
            run, state.conversation_id, deps.config.max_tool_iterations
        )
        task = asyncio.create_task(self.graph.ainvoke(start, config))
        task.add_done_callback(handoff.close)
        try:
            while (component := await handoff.next()) is not None:
                yield component
                handoff.taken()
            result = task.result()
        finally:
            await _stop(task)
        for paused in (result or {}).get("__interrupt__", ()):
            request = ApprovalRequest.model_validate(paused.value)
            for component in approval_components(deps, state, request, paused.id):
                yield component

    async def _resume_turn(
        self, deps: TurnDeps, state: TurnState, decision: ApprovalDecision
    ) -> AsyncGenerator[UiComponent]:
        """``/approve <id>`` or ``/deny <id>``: checks, then the paused turn goes on."""
        key = f"{state.conversation_id}:{decision.approval_id}"
        if key in self._resuming:  # a double click while the first one still runs
            for component in refusal("busy", decision.approval_id):
                yield component
            return
        self._resuming.add(key)
        try:
            user = await deps.user_resolver.resolve_user(state.request_context)
            paused, problem = await self._resumable(state.conversation_id, decision, user)
            if paused is None:
                state.user, state.finished = user, True
                for component in refusal(problem or "missing", decision.approval_id):
                    yield component
                return
            paused.turn.restore_into(state, deps, paused.history)
            state.user = user  # permissions as of now: groups may have changed while paused
            state.features = frozenset(deps.config.ui_features.features_for(user))
            if state.tool_context is not None:
                state.tool_context.user = user
            if deps.config.include_thinking_indicators:
                working = StatusBarUpdateComponent(status="working", message="Working on it...")
                yield UiComponent.of(working)
            resume = self._turn_graph.resume_with(decision.approved)
            async with aclosing(self._drive(deps, state, resume)) as turn:
                async for component in turn:
                    yield component
        finally:
            self._resuming.discard(key)

    async def _resumable(
        self, conversation_id: str | None, decision: ApprovalDecision, user: User
    ) -> tuple[_Resumable | None, RefusalReason | None]:
        """The paused turn to resume and its stored history, or why not: only the latest
        checkpoint of the thread, only by the asker, only while the stored conversation is
        as the turn found it."""
        checkpoint = await self.get_state(conversation_id) if conversation_id else None
        pending = checkpoint.pending_approval if checkpoint else None
        if (
            checkpoint is None
            or checkpoint.turn is None
            or pending is None
            or (pending.id != decision.approval_id)
        ):
            return None, "missing"
        if pending.request.user_id != user.id:
            return None, "not_yours"
        stored = await self.conversation_store.get_conversation(conversation_id or "", user)
        history = stored.messages if stored else []
        if len(history) != checkpoint.turn.committed_messages:
            return None, "expired"
        return _Resumable(checkpoint.turn, history), None

    async def get_state(self, conversation_id: str) -> TurnCheckpoint | None:
        """The conversation's last checkpointed turn, or None before any (needs a
        checkpointer)."""
        if self.checkpointer is None:
            raise RuntimeError("get_state needs GraphAgent(checkpointer=...)")
        snapshot: StateSnapshot = await self.graph.aget_state(
            {"configurable": {"thread_id": conversation_id}}
        )
        if not snapshot.values and not snapshot.next:
            return None
        data = snapshot.values.get("turn")
        pending = next(
            (
                PendingApproval(id=i.id, request=ApprovalRequest.model_validate(i.value))
                for i in snapshot.interrupts
            ),
            None,
        )
        return TurnCheckpoint(
            turn=None if data is None else TurnSnapshot.model_validate(data),
            next_nodes=list(snapshot.next),
            pending_approval=pending,
            checkpoint_id=snapshot.config.get("configurable", {}).get("checkpoint_id"),
        )

    async def resume(
        self,
        request_context: RequestContext,
        conversation_id: str,
        *,
        approved: bool,
        approval_id: str | None = None,
    ) -> AsyncIterator[UiComponent]:
        """Answer a pending approval (default: the conversation's current one); the same as
        sending ``/approve <id>`` or ``/deny <id>``."""
        if approval_id is None:
            checkpoint = await self.get_state(conversation_id)
            pending = checkpoint.pending_approval if checkpoint else None
            approval_id = pending.id if pending else "none"
        message = decision_message(approval_id, approved=approved)
        async for component in self.send_message(
            request_context, message, conversation_id=conversation_id
        ):
            yield component


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel the graph task if it still runs and wait until its nodes have unwound."""
    if not task.done():
        task.cancel()
        await asyncio.wait([task])
    elif not task.cancelled():
        task.exception()  # mark an error the reader never reached as retrieved
