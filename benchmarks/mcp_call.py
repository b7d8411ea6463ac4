"""One MCP tool call through Threadline against the bare ``mcp`` client, same server, same run.

The README's tickets server (``examples/mcp_tickets.py``) runs as its own process, over
stdio and over streamable HTTP on 127.0.0.1. For each transport, in the same run, rounds
alternate which side goes first:

- **bare**: the SDK's ``Client.call_tool("get_ticket", {"ticket_id": 2})`` on an open session;
- **Threadline**: ``ToolRegistry.execute`` of the same call, as a turn runs it: lookup,
  permission check, argument validation against the server's schema, the session (one per
  server per process), the call, the result as a ``ToolResult`` (masked, cut, a table
  where tabular).

Also, for scale: the same ``ToolRegistry.execute`` of a local Python tool returning the same
record (no MCP). We quote the median over rounds of each side's p50 and Threadline's added
milliseconds. Goal: <= 1.5 ms added p50 (stdio and HTTP).

    .venv/bin/python benchmarks/mcp_call.py [--calls 300] [--rounds 5]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import result_line

from agent_core import Tool, ToolCall, ToolContext, ToolRegistry, ToolResult, User
from agent_core.mcp import McpHub, McpServerConfig, attach
from agent_core.state.testing import free_port

ROOT = Path(__file__).resolve().parents[1]
TICKETS = str(ROOT / "examples" / "mcp_tickets.py")
GOAL_MS = 1.5
USER = User(id="bench", group_memberships=["support"])
RECORD = {"id": 2, "title": "Invoice PDF has the wrong VAT", "status": "open", "filed_by": "bo"}


class TicketArgs(BaseModel):
    ticket_id: int


class LocalTicket(Tool[TicketArgs]):
    name = "local_ticket"
    description = "The same record, from Python"

    def get_args_schema(self) -> type[TicketArgs]:
        return TicketArgs

    async def execute(self, context: ToolContext, args: TicketArgs) -> ToolResult:
        import json

        return ToolResult(success=True, result_for_llm=json.dumps(RECORD))


@contextlib.contextmanager
def http_server() -> Any:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, TICKETS, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the tickets server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


def server_config(transport: str, url: str) -> McpServerConfig:
    if transport == "stdio":
        return McpServerConfig(name="tickets", command=sys.executable, args=[TICKETS])
    return McpServerConfig(name="tickets", url=url)


@contextlib.asynccontextmanager
async def bare_client(transport: str, url: str) -> AsyncIterator[Any]:
    from mcp import Client, StdioServerParameters

    target: Any = (
        StdioServerParameters(command=sys.executable, args=[TICKETS])
        if transport == "stdio"
        else url
    )
    async with Client(target, cache=None) as client:
        await client.list_tools()  # as Threadline does: the output schema is known
        yield client


async def timed(call: Callable[[], Awaitable[Any]], count: int) -> list[int]:
    samples = []
    for _ in range(count):
        started = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - started)
    return samples


def p50_ms(samples: list[int]) -> float:
    return statistics.median(samples) / 1e6


async def measure(transport: str, url: str, calls: int, rounds: int) -> dict[str, Any]:
    hub = McpHub([server_config(transport, url)])
    registry = ToolRegistry()
    registry.register_local_tool(LocalTicket())
    from agent_core import Agent, ScriptedLlmService, StaticUserResolver

    agent = Agent(
        llm_service=ScriptedLlmService(),
        tool_registry=registry,
        user_resolver=StaticUserResolver(USER),
    )
    attach(agent, hub)
    await registry.offer(USER)
    context = ToolContext(user=USER, conversation_id="bench", request_id="bench")
    mcp_call = ToolCall(id="1", name="get_ticket", arguments={"ticket_id": 2})
    local_call = ToolCall(id="2", name="local_ticket", arguments={"ticket_id": 2})
    figures: dict[str, list[float]] = {"bare": [], "threadline": [], "local": []}
    try:
        async with bare_client(transport, url) as client:

            async def bare() -> None:
                await client.call_tool("get_ticket", {"ticket_id": 2})

            async def through() -> None:
                result = await registry.execute(mcp_call, context)
                assert result.success, result.result_for_llm

            async def local() -> None:
                await registry.execute(local_call, context)

            await timed(bare, max(20, calls // 3))  # warm-up, not counted
            await timed(through, max(20, calls // 3))
            for round_ in range(rounds):
                order = [("bare", bare), ("threadline", through)]
                for name, call in order if round_ % 2 == 0 else reversed(order):
                    figures[name].append(p50_ms(await timed(call, calls)))
                figures["local"].append(p50_ms(await timed(local, calls)))
    finally:
        await hub.aclose()
    bare_ms = statistics.median(figures["bare"])
    ours_ms = statistics.median(figures["threadline"])
    return {
        "bare_p50_ms": round(bare_ms, 3),
        "threadline_p50_ms": round(ours_ms, 3),
        "added_p50_ms": round(ours_ms - bare_ms, 3),
        "local_tool_p50_ms": round(statistics.median(figures["local"]), 3),
        "rounds_added_ms": [
            round(t - b, 3) for t, b in zip(figures["threadline"], figures["bare"], strict=True)
        ],
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.WARNING)
    results: dict[str, Any] = {}
    with http_server() as url:
        for transport in ("stdio", "http"):
            results[transport] = await measure(transport, url, args.calls, args.rounds)
            figures = results[transport]
            print(
                f"{transport:5}  bare {figures['bare_p50_ms']:.3f} ms   Threadline "
                f"{figures['threadline_p50_ms']:.3f} ms   added {figures['added_p50_ms']:+.3f} ms"
                f"   (a local Python tool: {figures['local_tool_p50_ms']:.3f} ms)"
            )
    worst = max(results[t]["added_p50_ms"] for t in results)
    print(result_line("mcp_call", goal_added_ms=GOAL_MS, met=worst <= GOAL_MS, **results))


if __name__ == "__main__":
    asyncio.run(main())
