"""Per-turn overhead of ``GraphAgent`` (the turn as a LangGraph graph) against ``Agent``.

Same run, same zero-latency ``ScriptedLlmService``, streaming on, no observability, each turn
in a new conversation. Scenarios: (a) a text reply (initialize, prepare, think, finalize),
(b) one tool call then a reply (... think, tools, think, finalize). Rounds alternate which
agent goes first; we quote the median over rounds of each side's per-turn p50 and the added
milliseconds per turn. Goal: <= 1.0 ms added per turn, both scenarios. For information: the
same with an ``InMemorySaver`` checkpointer (a JSON snapshot of the turn after every node),
and the LangGraph floor - the same graph shape with empty nodes - so the added time splits into
what LangGraph itself costs and what our wiring (handoff, config) adds.

    .venv/bin/python benchmarks/graph_overhead.py [--turns 600] [--rounds 5]

Each goal is printed with "met" or "NOT met"; the last line printed is one JSON object, with
each goal's value, goal and verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import Goals, result_line, summary_us
from _turns import timed_turns, tool_then_answer

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    RequestContext,
    StaticUserResolver,
    Tool,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResult,
    User,
)
from agent_core.graph import GraphAgent

GOAL_MS = 1.0
ECHO = ToolCall(id="call_1", name="echo", arguments={"text": "hi"})
KINDS = ("agent", "graph", "graph+checkpointer")


class EchoArgs(BaseModel):
    text: str


class Echo(Tool[EchoArgs]):
    name = "echo"
    description = "Echo the text back"

    def get_args_schema(self) -> type[EchoArgs]:
        return EchoArgs

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=args.text)


def build(kind: str, use_tool: bool) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(Echo(), ["user"])
    options: dict[str, Any] = {
        "llm_service": tool_then_answer(ECHO if use_tool else None, "Hello there"),
        "tool_registry": registry,
        "user_resolver": StaticUserResolver(User(id="u1", group_memberships=["user"])),
        "agent_memory": InMemoryAgentMemory(),
    }
    if kind == "agent":
        return Agent(**options)
    if kind == "graph":
        return GraphAgent(**options)
    from langgraph.checkpoint.memory import InMemorySaver

    return GraphAgent(checkpointer=InMemorySaver(), **options)


def empty_turn_graph(use_tool: bool) -> Any:
    """Our graph's shape (Command routing after initialize and think) with empty nodes."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command

    class Shape(TypedDict, total=False):
        turn: dict[str, Any]

    async def empty(state: Shape, config: RunnableConfig) -> None:
        return None

    async def initialize(state: Shape, config: RunnableConfig) -> Command[str]:
        return Command(goto="prepare")

    async def think(state: Shape, config: RunnableConfig) -> Command[str]:
        count = config["configurable"]["thinks"]
        count.append(1)
        return Command(goto="tools" if use_tool and len(count) == 1 else "finalize")

    graph = StateGraph(Shape)
    graph.add_node("initialize", initialize, destinations=("prepare", END))
    graph.add_node("prepare", empty)
    graph.add_node("think", think, destinations=("tools", "finalize"))
    graph.add_node("tools", empty)
    graph.add_node("finalize", empty)
    graph.add_edge(START, "initialize")
    graph.add_edge("prepare", "think")
    graph.add_edge("tools", "think")
    graph.add_edge("finalize", END)
    return graph.compile()


async def floor_turns(use_tool: bool, count: int, warmup: int) -> list[int]:
    graph, samples = empty_turn_graph(use_tool), []
    for index in range(warmup + count):
        config: RunnableConfig = {
            "configurable": {"thread_id": "", "thinks": []},
            "recursion_limit": 50,
        }
        started = time.perf_counter_ns()
        await graph.ainvoke({}, config)
        if index >= warmup:
            samples.append(time.perf_counter_ns() - started)
    return samples


async def turns(kind: str, use_tool: bool, count: int, warmup: int) -> list[int]:
    agent, context = build(kind, use_tool), RequestContext()

    async def turn(index: int) -> None:
        async for _ in agent.send_message(context, "hello"):
            pass

    return await timed_turns(turn, count, warmup)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    p50s: dict[tuple[str, str], list[float]] = {}
    for round_index in range(args.rounds):
        order = KINDS if round_index % 2 == 0 else tuple(reversed(KINDS))
        for scenario in ("text", "tool"):
            for kind in order:
                samples = asyncio.run(turns(kind, scenario == "tool", args.turns, args.warmup))
                p50s.setdefault((scenario, kind), []).append(summary_us(samples)["p50_us"])
            samples = asyncio.run(floor_turns(scenario == "tool", args.turns, args.warmup))
            p50s.setdefault((scenario, "floor"), []).append(summary_us(samples)["p50_us"])
    figures: dict[str, object] = {"turns": args.turns, "rounds": args.rounds}
    goals = Goals()
    for scenario in ("text", "tool"):
        base = statistics.median(p50s[(scenario, "agent")])
        figures[f"{scenario}_agent_p50_us"] = round(base, 1)
        print(f"{scenario:4} agent{'':19} p50 {base:8.1f} µs")
        for kind in KINDS[1:]:
            p50 = statistics.median(p50s[(scenario, kind)])
            added_ms = (p50 - base) / 1000
            key = kind.replace("+", "_")
            figures[f"{scenario}_{key}_p50_us"] = round(p50, 1)
            figures[f"{scenario}_{key}_added_ms"] = round(added_ms, 3)
            figures[f"{scenario}_{key}_ratio"] = round(p50 / base, 2)
            verdict = (
                goals.check(f"{scenario}_graph_added_ms", added_ms, "<=", GOAL_MS, " ms")
                if kind == "graph"
                else ""
            )
            print(
                f"{scenario:4} {kind:24} p50 {p50:8.1f} µs  added {added_ms:6.3f} ms/turn  "
                f"x{p50 / base:.2f} {verdict}"
            )
            if kind == "graph":
                floor_ms = statistics.median(p50s[(scenario, "floor")]) / 1000
                figures[f"{scenario}_langgraph_floor_ms"] = round(floor_ms, 3)
                figures[f"{scenario}_graph_wiring_ms"] = round(added_ms - floor_ms, 3)
                print(
                    f"{scenario:4} {'  of which LangGraph floor':24}     {floor_ms:6.3f} ms/turn"
                    f"  (our wiring {added_ms - floor_ms:.3f} ms)"
                )
    print(result_line("graph_overhead", goals, **figures))


if __name__ == "__main__":
    main()
