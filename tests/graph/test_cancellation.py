"""Stop (cancelling the reader) cancels the graph task, waits for it to unwind, then settles
the turn exactly as ``Agent`` does."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from agent_core import (
    Conversation,
    MemoryConversationStore,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolContext,
    ToolResult,
)
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.turn.resuming import Resume
from agent_core.turn.stopping import STOPPED_NOTE
from tests.support.tools import EchoArgs
from tests.support.tools import EchoTool as Echo

from .conftest import (
    DropTable,
    MetadataUserResolver,
    assert_valid,
    collect,
    graph_agent,
    of_type,
    stored,
)


class BlockingEcho(Echo):
    """Blocks until cancelled; notes when its cancellation has fully unwound."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.unwound = False

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits
            self.unwound = True
        raise AssertionError("unreachable")


class WitnessStore(MemoryConversationStore):
    """Records, at each save, whether the blocked tool had already unwound."""

    def __init__(self, tool: BlockingEcho) -> None:
        super().__init__()
        self.tool = tool
        self.unwound_at_save: list[bool] = []

    async def update_conversation(self, conversation: Conversation) -> None:
        self.unwound_at_save.append(self.tool.unwound)
        await super().update_conversation(conversation)


def other_tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}


async def stop_when(event: asyncio.Event, task: asyncio.Task[Any]) -> None:
    await asyncio.wait_for(event.wait(), timeout=5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_stop_during_a_tool_unwinds_the_graph_before_settling() -> None:
    tool = BlockingEcho()
    store = WitnessStore(tool)
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"})])
    agent = graph_agent(llm, tools=[tool], conversation_store=store)
    reader = asyncio.create_task(collect(agent, "go"))
    await stop_when(tool.started, reader)
    assert store.unwound_at_save == [True]  # settled only after the graph task ended
    assert other_tasks() == set()
    messages = await stored(agent)
    assert_valid(messages)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert STOPPED_NOTE in messages[2].content and STOPPED_NOTE in messages[-1].content


async def test_stop_during_an_approved_tool(saver: InMemorySaver) -> None:
    """The resumed turn runs through the graph again; stopping it commits that turn
    consistently, and resuming the approval again cannot run the tool a second time."""
    tool = DropTable()
    tool.release = asyncio.Event()  # never set: the tool runs until stopped
    llm = ScriptedLlmService([ScriptedResponse.tool("drop_table", {"table": "orders"})])
    agent = graph_agent(llm, tools=[tool], checkpointer=saver, user_resolver=MetadataUserResolver())
    (view,) = of_type(await collect(agent, "drop orders"), "approval")
    answer = await agent.decide_approval(
        RequestContext(), view.approval_id, approve=True, conversation_id="conv-1"
    )
    assert answer.resume

    async def resumed() -> list[Any]:
        return [c async for c in agent.send_message(RequestContext(), Resume(view.approval_id))]

    reader = asyncio.create_task(resumed())
    await stop_when(tool.started, reader)
    assert other_tasks() == set()
    messages = await stored(agent)
    assert_valid(messages)
    assert (messages[0].role, messages[0].content) == ("user", "drop orders")
    assert messages[-1].content == f"({STOPPED_NOTE})"
    again = [c async for c in agent.send_message(RequestContext(), Resume(view.approval_id))]
    assert "nothing ran" in of_type(again, "notification")[0].message
    assert tool.executions == ["orders"]


async def test_stop_while_the_llm_streams_from_the_wire() -> None:
    """Real Anthropic client; the fake server holds the stream after the first delta."""
    async with FakeAnthropic() as fake:
        fake.queue(
            Reply.text("Hel", "lo", hold_after=1, resume=asyncio.Event()),
            Reply.text("Next answer."),
        )
        service = AnthropicLlmService(
            model="claude-test-model", api_key="sk-ant-test", base_url=fake.base_url, timeout=5.0
        )
        try:
            agent = graph_agent(service)  # type: ignore[arg-type]
            first_delta = asyncio.Event()

            async def read() -> None:
                async for component in agent.send_message(
                    RequestContext(), "hi", conversation_id="conv-1"
                ):
                    if component.rich_component.type.value == "text":
                        first_delta.set()

            await stop_when(first_delta, asyncio.create_task(read()))
            messages = await stored(agent)
            assert [(m.role, m.content) for m in messages] == [
                ("user", "hi"),
                ("assistant", f"({STOPPED_NOTE})"),
            ]
            out = await asyncio.wait_for(collect(agent, "again"), timeout=5)
            assert of_type(out, "text")[-1].content == "Next answer."
        finally:
            await service.aclose()


async def test_closing_the_stream_cancels_the_graph_at_once() -> None:
    """Regression: closing the stream left _run_turn open, so the graph ran on a few ticks."""
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "done"])
    agent = graph_agent(llm, tools=[Echo()])
    stream = agent.send_message(RequestContext(), "go", conversation_id="conv-1")
    async for component in stream:
        if component.rich_component.type.value == "tool_status":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert other_tasks() == set()
