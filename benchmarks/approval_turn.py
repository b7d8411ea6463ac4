"""What waiting for approval costs a turn: pause, decide, resume, against the same turn
whose tool needs no approval.

Same run, same zero-latency ``ScriptedLlmService``, each turn in a new conversation: the
model calls one tool, then answers. Baseline: the tool's ``approval = "never"`` (one
``send_message``). Approval: ``"always"``: ``send_message`` (the round waits; the record
goes into the book and the conversation is committed), ``decide_approval`` (the asker's
click: the clicker resolved, the one atomic decision), ``send_message`` with a ``Resume`` (the asker
resolved again, the conversation loaded, the tool run once, the answer). Books: in memory,
SQLite (the one-process default), and Redis (a throwaway ``redis-server`` on loopback, when
installed). Rounds alternate which side goes first; we quote the median over rounds of each
side's per-turn p50 and the milliseconds approval adds. Goals: <= 5 ms added per approved
turn on SQLite, <= 1.5 ms on Redis (a person's click takes seconds; this is the machinery's
share), each printed with "met" or "NOT met".

    .venv/bin/python benchmarks/approval_turn.py [--turns 300] [--rounds 5] [--no-redis]

The last line printed is one JSON object, with each goal's value, goal and verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
from agent_core.approvals import ApprovalBook
from agent_core.state import (
    KeyValueStore,
    MemoryKeyValueStore,
    RedisKeyValueStore,
    SqliteKeyValueStore,
    connect_redis,
)
from agent_core.state.testing import RedisServer, redis_available
from agent_core.turn.resuming import Resume

GOALS_MS = {"sqlite": 5.0, "redis": 1.5}
ANA = User(id="ana", username="Ana", group_memberships=["user"])


class RefundArgs(BaseModel):
    order: int


class Refund(Tool[RefundArgs]):
    name = "refund"
    description = "Refund an order"

    def __init__(self, approval: str) -> None:
        self.approval = approval  # type: ignore[assignment]

    def get_args_schema(self) -> type[RefundArgs]:
        return RefundArgs

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"refunded {args.order}")


def build(approval: str, store: KeyValueStore) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(Refund(approval), ["user"])
    return Agent(
        llm_service=tool_then_answer(
            ToolCall(id="call_1", name="refund", arguments={"order": 42}), "Refunded."
        ),
        tool_registry=registry,
        user_resolver=StaticUserResolver(ANA),
        agent_memory=InMemoryAgentMemory(),
        approval_book=ApprovalBook(store),
    )


async def one_turn(agent: Agent, conversation: str) -> None:
    context = RequestContext()
    approval_id = None
    async for component in agent.send_message(context, "refund 42", conversation_id=conversation):
        approval_id = getattr(component.rich_component, "approval_id", approval_id)
    if approval_id is None:
        return
    answer = await agent.decide_approval(
        context, approval_id, approve=True, conversation_id=conversation
    )
    assert answer.resume, answer.message
    async for _ in agent.send_message(context, Resume(approval_id)):
        pass


async def turns(approval: str, store: KeyValueStore, count: int, warmup: int) -> list[int]:
    agent = build(approval, store)

    async def turn(index: int) -> None:
        await one_turn(agent, f"{approval}-{index}-{time.perf_counter_ns()}")

    return await timed_turns(turn, count, warmup)


async def measure(
    book: str, store: KeyValueStore, args: argparse.Namespace, goals: Goals
) -> dict[str, Any]:
    p50s: dict[str, list[float]] = {"never": [], "always": []}
    for round_index in range(args.rounds):
        order = ("never", "always") if round_index % 2 == 0 else ("always", "never")
        for approval in order:
            samples = await turns(approval, store, args.turns, args.warmup)
            p50s[approval].append(summary_us(samples)["p50_us"])
    base, waited = statistics.median(p50s["never"]), statistics.median(p50s["always"])
    added = (waited - base) / 1000
    goal = GOALS_MS.get(book)
    verdict = (
        "(no goal)" if goal is None else goals.check(f"{book}_added_ms", added, "<=", goal, " ms")
    )
    print(
        f"{book:7} no approval p50 {base:8.1f} µs   approved p50 {waited:8.1f} µs   "
        f"added {added:6.3f} ms/turn {verdict}"
    )
    return {
        f"{book}_baseline_p50_us": round(base, 1),
        f"{book}_approved_p50_us": round(waited, 1),
        f"{book}_added_ms": round(added, 3),
    }


async def run(args: argparse.Namespace, goals: Goals) -> dict[str, Any]:
    figures: dict[str, Any] = {"turns": args.turns, "rounds": args.rounds}
    figures |= await measure("memory", MemoryKeyValueStore(max_entries=1_000_000), args, goals)
    with tempfile.TemporaryDirectory() as folder:
        sqlite = SqliteKeyValueStore(Path(folder) / "state.db", table="records")
        try:
            figures |= await measure("sqlite", sqlite, args, goals)
        finally:
            await sqlite.close()
        if args.redis and redis_available():
            server = RedisServer(Path(folder) / "redis")
            server.start()
            client = connect_redis(server.url)
            try:
                figures |= await measure("redis", RedisKeyValueStore(client), args, goals)
            finally:
                await client.aclose()
                server.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-redis", dest="redis", action="store_false")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    goals = Goals()
    figures = asyncio.run(run(args, goals))
    print(result_line("approval_turn", goals, **figures))


if __name__ == "__main__":
    main()
