"""What the hash-chained audit trail adds to a turn, on SQLite and on Redis.

Same run, same zero-latency ``ScriptedLlmService``, a turn with one tool call (five records:
the question, the access check, the invocation, the result, the answer), each turn in a new
conversation. Baseline: the same agent with no audit logger. With the trail: a
``TrailAuditLogger`` over the back end's ``AuditStore`` (SQLite ``state.db`` in a temporary
directory; a private ``redis-server``). Rounds alternate which side goes first; we quote the
median over rounds of each side's per-turn p50 and the difference. Goal: <= 0.2 ms added
per turn (p50) on each back end. The trail is verified at the end (it must hold every
record).

    .venv/bin/python benchmarks/audit_trail.py [--turns 300] [--rounds 3] [--no-redis]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import result_line, summary_us
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
from agent_core.audit_trail import TrailAuditLogger
from agent_core.state.audit import AuditStore

GOAL_MS = 0.2
ECHO = ToolCall(id="call_1", name="echo", arguments={"text": "hi", "api_key": "sk-1"})
USER = User(id="slack:T1:U1", username="ana", group_memberships=["user"])


class EchoArgs(BaseModel):
    text: str
    api_key: str


class Echo(Tool[EchoArgs]):
    name = "echo"
    description = "Echo the text back"

    def get_args_schema(self) -> type[EchoArgs]:
        return EchoArgs

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=args.text)


def build(store: AuditStore | None) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(Echo(), ["user"])
    return Agent(
        llm_service=tool_then_answer(ECHO, "Hello there"),
        tool_registry=registry,
        user_resolver=StaticUserResolver(USER),
        agent_memory=InMemoryAgentMemory(),
        audit_logger=None if store is None else TrailAuditLogger(store),
    )


async def turns(agent: Agent, count: int, warmup: int, tag: str) -> list[int]:
    async def turn(index: int) -> None:
        conversation = f"slack:T1:C1:{tag}.{index}"
        async for _ in agent.send_message(
            RequestContext(), "echo hi", conversation_id=conversation
        ):
            pass

    return await timed_turns(turn, count, warmup)


async def compare(store: AuditStore, args: argparse.Namespace) -> dict[str, Any]:
    sides = {"without": build(None), "with_trail": build(store)}
    p50s: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for name in order:
            samples = await turns(sides[name], args.turns, args.warmup, f"{name}{round_}")
            p50s[name].append(summary_us(samples)["p50_us"])
    without = statistics.median(p50s["without"])
    with_trail = statistics.median(p50s["with_trail"])
    verdict = await store.verify()
    added_ms = round((with_trail - without) / 1000, 3)
    return {
        "without_p50_us": without,
        "with_trail_p50_us": with_trail,
        "added_ms": added_ms,
        "records": verdict.checked,
        "chain_ok": verdict.ok,
        "met": added_ms <= GOAL_MS and verdict.ok,
    }


async def sqlite_figures(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    from agent_core.state.audit_sqlite import SqliteAuditStore

    store = SqliteAuditStore(directory / "state.db")
    try:
        return await compare(store, args)
    finally:
        await store.close()


async def redis_figures(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from agent_core.state.audit_redis import RedisAuditStore
    from agent_core.state.redis_client import connect_redis

    client = connect_redis(url)
    try:
        return await compare(RedisAuditStore(client, key_prefix="bench:"), args)
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-redis", action="store_true", help="SQLite only")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="audit-trail-") as folder:
        directory = Path(folder)
        results["sqlite"] = asyncio.run(sqlite_figures(args, directory))
        if not args.no_redis:
            from agent_core.state.testing import RedisServer

            with RedisServer(directory / "redis") as redis:
                results["redis"] = asyncio.run(redis_figures(args, redis.url))
    for backend, figures in results.items():
        print(
            f"{backend:<7} without {figures['without_p50_us']:8.1f} us  with the trail "
            f"{figures['with_trail_p50_us']:8.1f} us  added {figures['added_ms']:.3f} ms "
            f"({figures['records']} records, chain {'ok' if figures['chain_ok'] else 'BROKEN'})"
        )
    met = {backend: figures["met"] for backend, figures in results.items()}
    print(
        f"goal: <= {GOAL_MS} ms added per turn (p50): "
        + ", ".join(f"{b} {'met' if m else 'NOT met'}" for b, m in met.items())
    )
    print(result_line("audit_trail", goal_ms=GOAL_MS, turns=args.turns, goals=met, **results))


if __name__ == "__main__":
    main()
