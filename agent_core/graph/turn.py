"""The turn as a LangGraph ``StateGraph`` whose nodes are the plain ``Agent``'s stages::

    START -> initialize -> prepare -> think -> (tools -> think)* -> finalize -> END
             open_turn     prepare    think     act     next_step   finish
    initialize -> END when the turn was answered early (starter UI, workflow command)
    tools -> finalize when a call waits for approval (``agent_core.turn.approving``)

A turn resumed after its approval was decided (``state.approval``) starts the same graph:
``initialize`` opens it with ``open_resumed``, and ``prepare`` goes straight to ``tools``
(the round that waited), or to ``stop`` when the asker stopped it while it waited.

The two decisions are taken by the node that precedes them, returning
``Command(goto=router(deps, turn))`` (``next_step`` after ``think``); that costs less per step than
a conditional edge, and ``destinations=`` keeps the drawn graph (``graph.get_graph()``) whole.

The nodes share the agent's ``TurnDeps`` and one live ``TurnState`` through
``config["configurable"]`` (a ``GraphRun``; checkpoints keep only primitive configurable
values, so it is never stored) and emit components through the run's ``Handoff``; the
compiled graph itself holds no agent. With a checkpointer each node also writes the turn's
JSON ``TurnSnapshot`` into the graph state: that is what a checkpoint holds, what
``GraphAgent.get_state`` shows and what a resumed turn is rebuilt from.

Importing this module imports LangGraph; ``agent_core.graph.agent`` imports it on use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from agent_core.components import ComponentStream, UiComponent
from agent_core.graph.handoff import Handoff
from agent_core.graph.state import snapshot_of
from agent_core.turn import TurnDeps, TurnState, act, finish, next_step, open_turn, prepare, think
from agent_core.turn.resuming import open_resumed, settle_cancelled

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

RUN_KEY = "threadline_run"

Stage = Callable[
    [TurnDeps, TurnState],
    AsyncIterator[UiComponent] | Awaitable[list[UiComponent] | None],
]
"""A stage streams its components, or returns them (or nothing) when it is done."""


class GraphTurn(TypedDict, total=False):
    """The graph state: the turn's JSON snapshot, written only when checkpointing."""

    turn: dict[str, Any]


class Node(Protocol):
    def __call__(
        self, state: GraphTurn, config: RunnableConfig
    ) -> Awaitable[GraphTurn | Command[str] | None]: ...


Router = Callable[[TurnDeps, TurnState], str]
"""Picks the next node from the live turn, e.g. ``next_step`` after ``think``."""


TurnGraph = CompiledStateGraph[GraphTurn, None, GraphTurn, GraphTurn]


@dataclass(slots=True)
class GraphRun:
    """What one graph run needs and no checkpoint may hold: the agent's deps, the live turn
    and its handoff."""

    deps: TurnDeps
    state: TurnState
    handoff: Handoff
    checkpointing: bool

    async def perform(self, stage: Stage) -> None:
        """Run ``stage`` on the live turn, handing each component over as it exists."""
        produced = stage(self.deps, self.state)
        if isinstance(produced, AsyncIterator):
            async for component in produced:
                await self.handoff.emit(component)
            return
        for component in await produced or ():
            await self.handoff.emit(component)

    def record(self) -> GraphTurn | None:
        """The node's state update: the turn's snapshot when checkpointing, else nothing."""
        return {"turn": snapshot_of(self.state)} if self.checkpointing else None


def run_config(run: GraphRun, thread_id: str | None, max_tool_iterations: int) -> RunnableConfig:
    """The config of one run: the thread (conversation id) and a step limit above the
    longest legal turn (the agent's own tool limit ends the loop first)."""
    return {
        "configurable": {"thread_id": thread_id or "", RUN_KEY: run},
        "recursion_limit": 2 * max_tool_iterations + 10,
    }


def _run(config: RunnableConfig) -> GraphRun:
    run = config.get("configurable", {}).get(RUN_KEY)
    if not isinstance(run, GraphRun):
        raise RuntimeError(f"the turn graph needs a GraphRun in configurable[{RUN_KEY!r}]")
    return run


def _opening(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """A new turn's opening, or a resumed one's."""
    return open_resumed(deps, state) if state.approval is not None else open_turn(deps, state)


def _after_prepare(deps: TurnDeps, turn: TurnState) -> str:
    if turn.approval is None:
        return "think"
    return "stop" if turn.approval.state == "cancelled" else "tools"


def build_turn_graph(checkpointer: BaseCheckpointSaver[Any] | None) -> TurnGraph:
    """Wire the stages into a compiled graph (once per agent, for its checkpointer)."""

    def stage_node(stage: Stage, route: Router | None = None) -> Node:
        async def node(state: GraphTurn, config: RunnableConfig) -> GraphTurn | Command[str] | None:
            run = _run(config)
            await run.perform(stage)
            if route is None:
                return run.record()
            return Command(update=run.record(), goto=route(run.deps, run.state))

        return node

    def after_initialize(deps: TurnDeps, turn: TurnState) -> str:
        return END if turn.finished else "prepare"

    def after_think(deps: TurnDeps, turn: TurnState) -> str:
        return "tools" if next_step(deps, turn) == "act" else "finalize"

    def after_tools(deps: TurnDeps, turn: TurnState) -> str:
        return "finalize" if turn.awaiting is not None else "think"

    graph = StateGraph(GraphTurn)
    graph.add_node(
        "initialize", stage_node(_opening, after_initialize), destinations=("prepare", END)
    )
    graph.add_node(
        "prepare",
        stage_node(prepare, _after_prepare),
        destinations=("think", "tools", "stop"),
    )
    graph.add_node("think", stage_node(think, after_think), destinations=("tools", "finalize"))
    graph.add_node("tools", stage_node(act, after_tools), destinations=("think", "finalize"))
    graph.add_node("stop", stage_node(settle_cancelled))
    graph.add_node("finalize", stage_node(finish))
    graph.add_edge(START, "initialize")
    graph.add_edge("stop", END)
    graph.add_edge("finalize", END)
    return graph.compile(checkpointer=checkpointer)
