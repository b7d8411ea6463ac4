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
from collections.abc import AsyncGenerator
from contextlib import aclosing
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_core.agent import Agent
from agent_core.components import UiComponent
from agent_core.graph.handoff import Handoff
from agent_core.graph.state import TurnSnapshot
from agent_core.turn import TurnDeps, TurnState

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


class TurnCheckpoint(BaseModel):
    """The last checkpointed state of a conversation's turn (``GraphAgent.get_state``).

    ``next_nodes`` is empty when the turn ended. A turn waiting for approval has ended too:
    its approval is in the agent's ``approval_book``, on any process, checkpointer or not.
    """

    turn: TurnSnapshot | None
    next_nodes: list[str]
    checkpoint_id: str | None = None


class GraphAgent(Agent):
    """An ``Agent`` whose turn is a LangGraph graph, with checkpoints.

    Pass ``checkpointer=`` (``InMemorySaver()`` or any LangGraph checkpointer) to checkpoint
    every step under the conversation id (``get_state``). Tools that need approval
    (``Tool.approval``) pause the turn exactly as in ``Agent`` (``agent_core.approvals``):
    the same approval message, the same ``decide_approval`` / ``Resume``, on any
    process; the resumed turn runs through this graph again.

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

    async def _run_turn(
        self, deps: TurnDeps, state: TurnState
    ) -> AsyncGenerator[UiComponent, None]:
        if self.checkpointer is not None and state.conversation_id is None:
            state.conversation_id = str(uuid.uuid4())  # the thread id is needed up front
        async with aclosing(self._drive(deps, state)) as turn:  # closing it stops the graph
            async for component in turn:
                yield component

    async def _run_resumed(
        self, deps: TurnDeps, state: TurnState
    ) -> AsyncGenerator[UiComponent, None]:
        async with aclosing(self._drive(deps, state)) as turn:  # the graph opens it resumed
            async for component in turn:
                yield component

    async def _drive(self, deps: TurnDeps, state: TurnState) -> AsyncGenerator[UiComponent]:
        """Run the graph in a task and pass its components on as they happen."""
        handoff = Handoff()
        run = self._turn_graph.GraphRun(deps, state, handoff, self.checkpointer is not None)
        config = self._turn_graph.run_config(
            run, state.conversation_id, deps.config.max_tool_iterations
        )
        task = asyncio.create_task(self.graph.ainvoke({}, config))
        task.add_done_callback(handoff.close)
        try:
            while (component := await handoff.next()) is not None:
                yield component
                handoff.taken()
            task.result()
        finally:
            await _stop(task)

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
        return TurnCheckpoint(
            turn=None if data is None else TurnSnapshot.model_validate(data),
            next_nodes=list(snapshot.next),
            checkpoint_id=snapshot.config.get("configurable", {}).get("checkpoint_id"),
        )


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel the graph task if it still runs and wait until its nodes have unwound."""
    if not task.done():
        task.cancel()
        await asyncio.wait([task])
    elif not task.cancelled():
        task.exception()  # mark an error the reader never reached as retrieved
