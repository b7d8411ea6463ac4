"""Improvements 1 and 2: text streams as produced; tool calls of one response run together."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_core import (
    Agent,
    LlmRequest,
    LlmResponse,
    LlmService,
    LlmStreamChunk,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolContext,
    ToolResult,
)
from tests.support.tools import EchoArgs, EchoTool

from .conftest import collect, final_text


class GatedLlm(LlmService):
    """Streams "Hel", then waits until the test has *seen* it before sending "lo"."""

    def __init__(self) -> None:
        self.seen_first = asyncio.Event()

    async def send_request(self, request: LlmRequest) -> LlmResponse:
        raise NotImplementedError

    async def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]:
        yield LlmStreamChunk(content="Hel")
        await asyncio.wait_for(self.seen_first.wait(), timeout=5)
        yield LlmStreamChunk(content="lo")
        yield LlmStreamChunk(finish_reason="end_turn")


async def test_text_reaches_caller_while_llm_is_still_generating(
    make_agent: Callable[..., Agent],
) -> None:
    llm = GatedLlm()
    texts = []
    async for component in make_agent(llm).send_message(RequestContext(), "hi"):
        rich = component.rich_component
        if rich.type.value == "text":
            texts.append(rich)
            llm.seen_first.set()
    assert [t.lifecycle.value for t in texts] == ["create", "update", "update"]
    assert [t.delta for t in texts] == ["Hel", "lo", None]  # type: ignore[attr-defined]
    assert len({t.id for t in texts}) == 1
    assert texts[-1].content == "Hello" and not texts[-1].streaming  # type: ignore[attr-defined]


class SlowEcho(EchoTool):
    """Each call waits at a barrier: the turn only completes if calls run concurrently."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = asyncio.Barrier(parties)
        self.finished: list[str] = []

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        await asyncio.wait_for(self.barrier.wait(), timeout=5)
        if args.text == "slow":
            await asyncio.sleep(0.05)
        self.finished.append(args.text)
        return ToolResult(success=True, result_for_llm=f"echo: {args.text}")


async def test_tool_calls_run_concurrently_results_in_call_order(
    make_agent: Callable[..., Agent],
) -> None:
    tool = SlowEcho(parties=2)
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tools(("echo", {"text": "slow"}), ("echo", {"text": "fast"})),
            "done",
        ]
    )
    await collect(make_agent(llm, tools=[(tool, [])]), "go")
    assert tool.finished == ["fast", "slow"]  # they really overlapped
    results = [m for m in llm.requests[1].messages if m.role == "tool"]
    assert [m.content for m in results] == ["echo: slow", "echo: fast"]  # call order


class Exclusive(EchoTool):
    """Tracks how many executions overlap."""

    name = "exclusive"
    parallel_safe = False

    def __init__(self, tracker: dict[str, int]) -> None:
        super().__init__()
        self.tracker = tracker

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        self.tracker["running"] += 1
        self.tracker["max"] = max(self.tracker["max"], self.tracker["running"])
        await asyncio.sleep(0.01)
        self.tracker["running"] -= 1
        return ToolResult(success=True, result_for_llm=args.text)


class Tracked(Exclusive):
    name = "tracked"
    parallel_safe = True


async def test_parallel_unsafe_tool_runs_alone(make_agent: Callable[..., Agent]) -> None:
    tracker = {"running": 0, "max": 0}
    calls = [("tracked", {"text": "a"}), ("exclusive", {"text": "b"}), ("tracked", {"text": "c"})]
    llm = ScriptedLlmService([ScriptedResponse.tools(*calls), "done"])
    agent = make_agent(llm, tools=[(Exclusive(tracker), []), (Tracked(tracker), [])])
    await collect(agent, "go")
    assert tracker["max"] == 1
    assert [m.content for m in llm.requests[1].messages if m.role == "tool"] == ["a", "b", "c"]


async def test_parallel_safe_neighbours_overlap(make_agent: Callable[..., Agent]) -> None:
    tracker = {"running": 0, "max": 0}
    calls = [("tracked", {"text": "a"}), ("tracked", {"text": "b"}), ("tracked", {"text": "c"})]
    llm = ScriptedLlmService([ScriptedResponse.tools(*calls), "done"])
    await collect(make_agent(llm, tools=[(Tracked(tracker), [])]), "go")
    assert tracker["max"] == 3


async def test_non_streaming_mode_yields_final_text_once(
    make_agent: Callable[..., Agent],
) -> None:
    from agent_core import AgentConfig

    llm = ScriptedLlmService(["Plain answer"])
    out = await collect(make_agent(llm, config=AgentConfig(stream_responses=False)), "hi")
    texts = [c for c in out if c.rich_component.type.value == "text"]
    assert len(texts) == 1 and final_text(out) == "Plain answer"
    assert llm.requests[0].stream is False


def test_scripted_chunks_are_word_sized() -> None:
    assert ScriptedResponse(text="a b c").text_chunks() == ["a ", "b ", "c"]


async def _drain(gen: AsyncIterator[Any]) -> None:
    async for _ in gen:
        pass
