"""GraphAgent streams what Agent streams, in the same order, as it happens."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

from agent_core import (
    AgentConfig,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolContext,
    ToolResult,
    UiComponent,
)
from agent_core.errors import LlmServerError
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic, Reply
from tests.support.tools import EchoArgs
from tests.support.tools import EchoTool as Echo

from .conftest import ADMIN, ANA, build, collect, graph_agent, stored

VOLATILE = {"id", "timestamp", "created_at", "updated_at", "completed_at", "children"}


def normal(value: Any) -> Any:
    """A component dump without ids, clocks and timings, to compare two runs."""
    if isinstance(value, dict):
        return {
            k: normal(v) for k, v in value.items() if k not in VOLATILE and not k.endswith("_id")
        }
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\d+ ms", "N ms", value)
    return value


def shape(components: list[UiComponent]) -> list[Any]:
    return [normal(c.model_dump(mode="json")) for c in components]


Scenario = tuple[Callable[[], list[Any]], str, dict[str, Any]]

SCENARIOS: dict[str, Scenario] = {
    "text": (lambda: ["Hello there, friend."], "hi", {}),
    "one tool": (
        lambda: [ScriptedResponse.tool("echo", {"text": "a"}, text="Let me check."), "Done."],
        "go",
        {},
    ),
    "parallel tools": (
        lambda: [ScriptedResponse.tools(("echo", {"text": "a"}), ("echo", {"text": "b"})), "ok"],
        "go",
        {},
    ),
    "admin sees private detail": (
        lambda: [ScriptedResponse.tool("echo", {"text": "a"}, text="Checking."), "Done."],
        "go",
        {"user": ADMIN},
    ),
    "tool limit": (
        lambda: [ScriptedResponse.tool("echo", {"text": str(i)}) for i in range(3)],
        "loop",
        {"config": AgentConfig(max_tool_iterations=2)},
    ),
    "llm error": (lambda: [LlmServerError("down")], "hi", {}),
    "workflow command": (lambda: [], "/help", {}),
    "starter ui": (lambda: [], "", {}),
    "no streaming": (
        lambda: ["Plain answer."],
        "hi",
        {"config": AgentConfig(stream_responses=False)},
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_same_components_in_the_same_order_as_agent(name: str) -> None:
    script, message, options = SCENARIOS[name]
    runs = []
    for graph in (False, True):
        agent = build(ScriptedLlmService(script()), tools=[Echo()], graph=graph, **options)
        runs.append(shape(await collect(agent, message)))
    plain, graph_run = runs
    assert graph_run == plain
    assert plain  # every scenario shows something


async def test_text_streams_through_the_graph_from_the_wire() -> None:
    """Real Anthropic client on a fake Messages API that holds the stream after "Hel": the
    reader must get "Hel" before the server sends the rest."""
    async with FakeAnthropic() as fake:
        resume = asyncio.Event()
        fake.queue(Reply.text("Hel", "lo", hold_after=1, resume=resume))
        service = AnthropicLlmService(
            model="claude-test-model", api_key="sk-ant-test", base_url=fake.base_url, timeout=5.0
        )
        try:
            deltas = []
            async with asyncio.timeout(5):
                async for component in graph_agent(service).send_message(  # type: ignore[arg-type]
                    RequestContext(), "hi", conversation_id="conv-1"
                ):
                    rich = component.rich_component
                    if rich.type.value == "text":
                        deltas.append(rich.delta)  # type: ignore[attr-defined]
                        if rich.delta == "Hel":  # type: ignore[attr-defined]
                            assert fake.sent_events.count("content_block_delta") == 1
                            resume.set()
        finally:
            await service.aclose()
    assert deltas == ["Hel", "lo", None]


class WitnessedEcho(Echo):
    """Records what the reader had received when the tool started."""

    def __init__(self, seen: list[UiComponent]) -> None:
        super().__init__()
        self.seen = seen
        self.seen_at_start: list[str] = []

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        self.seen_at_start = [c.rich_component.type.value for c in self.seen]
        return await super().execute(context, args)


async def test_the_graph_advances_only_as_fast_as_the_reader() -> None:
    """The graph task never runs ahead of the channel: when the tool starts, the reader has
    already received the tool's "running" status, exactly as with the pull-driven Agent."""
    seen: list[UiComponent] = []
    tool = WitnessedEcho(seen)
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "done"])
    async for component in build(llm, tools=[tool]).send_message(
        RequestContext(), "go", conversation_id="conv-1"
    ):
        seen.append(component)
    assert tool.seen_at_start[-1:] == ["tool_status"]
    assert len(seen) > len(tool.seen_at_start)


async def test_conversation_and_llm_requests_match_agent() -> None:
    results = []
    for graph in (False, True):
        llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "first", "second"])
        agent = build(llm, tools=[Echo()], graph=graph)
        await collect(agent, "one")
        await collect(agent, "two")
        messages = await stored(agent, ANA)
        results.append(
            (
                [(m.role, m.content) for m in messages],
                [[(m.role, m.content) for m in r.messages] for r in llm.requests],
            )
        )
    assert results[0] == results[1]


def test_the_graph_is_the_documented_turn() -> None:
    graph = graph_agent(ScriptedLlmService()).graph.get_graph()
    edges = {(e.source, e.target) for e in graph.edges}
    assert edges == {
        ("__start__", "initialize"),
        ("initialize", "prepare"),
        ("initialize", "__end__"),
        ("prepare", "think"),
        ("prepare", "tools"),  # a turn resumed after its approval: the round that waited
        ("prepare", "stop"),  # ... or stopped while it waited
        ("think", "tools"),
        ("tools", "think"),
        ("tools", "finalize"),  # a round that waits for approval
        ("think", "finalize"),
        ("stop", "__end__"),
        ("finalize", "__end__"),
    }
