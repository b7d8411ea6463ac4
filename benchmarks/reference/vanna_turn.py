"""The reference implementation (vanna 2.0.2) under the same two zero-latency scenarios.

Run by ``benchmarks/agent_turn.py`` with the Python of a virtualenv holding vanna; prints one
JSON object with nanosecond samples per scenario and the peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

from pydantic import BaseModel
from vanna.core.agent.agent import Agent
from vanna.core.llm import LlmResponse, LlmService, LlmStreamChunk
from vanna.core.registry import ToolRegistry
from vanna.core.tool import Tool, ToolCall, ToolResult
from vanna.core.user import RequestContext, User, UserResolver
from vanna.integrations.local.agent_memory.in_memory import DemoAgentMemory


class EchoArgs(BaseModel):
    text: str


class Echo(Tool[EchoArgs]):
    @property
    def name(self) -> str:
        return "echo"

    @property
    def description(self) -> str:
        return "Echo the text back"

    def get_args_schema(self) -> type[EchoArgs]:
        return EchoArgs

    async def execute(self, context, args):  # type: ignore[no-untyped-def]
        return ToolResult(success=True, result_for_llm=f"echo: {args.text}")


class ZeroLatency(LlmService):
    def __init__(self, use_tool: bool) -> None:
        self.use_tool = use_tool

    def _respond(self, request) -> LlmResponse:  # type: ignore[no-untyped-def]
        if self.use_tool and request.messages[-1].role == "user":
            call = ToolCall(id="call_1", name="echo", arguments={"text": "hi"})
            return LlmResponse(tool_calls=[call], finish_reason="tool_use")
        return LlmResponse(content="Hello there", finish_reason="end_turn")

    async def send_request(self, request):  # type: ignore[no-untyped-def]
        return self._respond(request)

    async def stream_request(self, request):  # type: ignore[no-untyped-def]
        response = self._respond(request)
        if response.content:
            yield LlmStreamChunk(content=response.content)
        yield LlmStreamChunk(tool_calls=response.tool_calls, finish_reason=response.finish_reason)

    async def validate_tools(self, tools):  # type: ignore[no-untyped-def]
        return []


class Resolver(UserResolver):
    async def resolve_user(self, request_context):  # type: ignore[no-untyped-def]
        return User(id="u1", group_memberships=["user"])


async def run(use_tool: bool, turns: int, warmup: int) -> list[int]:
    registry = ToolRegistry()
    registry.register_local_tool(Echo(), ["user"])
    agent = Agent(
        llm_service=ZeroLatency(use_tool),
        tool_registry=registry,
        user_resolver=Resolver(),
        agent_memory=DemoAgentMemory(),
    )
    context, samples = RequestContext(), []
    for index in range(warmup + turns):
        started = time.perf_counter_ns()
        async for _ in agent.send_message(context, "hello"):
            pass
        if index >= warmup:
            samples.append(time.perf_counter_ns() - started)
    return samples


def main() -> None:
    turns, warmup = int(sys.argv[1]), int(sys.argv[2])
    import logging

    logging.disable(logging.CRITICAL)
    out = {
        "text": asyncio.run(run(False, turns, warmup)),
        "tool": asyncio.run(run(True, turns, warmup)),
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
