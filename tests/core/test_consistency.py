"""Improvement 5: the stored conversation is always valid, whatever happens to the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent_core import (
    Agent,
    AgentConfig,
    AgentError,
    LifecycleHook,
    MemoryConversationStore,
    Message,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolResult,
    User,
)
from agent_core.errors import LlmServerError
from tests.support.tools import EchoTool

from .conftest import USER, collect, content


def assert_valid(messages: list[Message]) -> None:
    """Every assistant tool call is answered by a tool message, and nothing else is."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls, f"orphan result {message.tool_call_id}"
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"unanswered tool calls {open_calls} before {message.role}"
            open_calls = {c.id for c in message.tool_calls or []}
    assert not open_calls, f"unanswered tool calls {open_calls}"


async def stored(store: MemoryConversationStore, user: User = USER) -> list[Message]:
    conversation = await store.get_conversation("conv-1", user)
    return conversation.messages if conversation else []


async def test_failed_turn_keeps_only_the_question_marked_unanswered(
    make_agent: Callable[..., Agent],
) -> None:
    """Issue 17 (was: a failed turn commits nothing, so "try again" reached a model that
    never saw the question): the question is kept, marked unanswered, with a note of what
    the asker was told; the failed turn's tool steps are not."""
    store = MemoryConversationStore()
    llm = ScriptedLlmService(
        [
            "first answer",
            ScriptedResponse.tool("echo", {"text": "x"}),
            LlmServerError("down"),
            "the answer to the second",
        ]
    )
    agent = make_agent(llm, tools=[(EchoTool(), [])], conversation_store=store)
    await collect(agent, "first")
    before = await stored(store)
    out = await collect(agent, "second")
    assert content(out)[-1].rich_component.status == "error"  # type: ignore[attr-defined]
    after = await stored(store)
    assert after[: len(before)] == before
    question, note = after[len(before) :]
    assert (question.role, question.content, question.metadata) == (
        "user",
        "second",
        {"unanswered": True},
    )
    assert note.role == "assistant" and note.content.startswith("(Not answered: The AI service")
    assert_valid(after)
    await collect(agent, "try again")
    assert [m.content for m in llm.requests[-1].messages if m.role == "user"] == [
        "first",
        "second",
        "try again",
    ]


class Blocking(EchoTool):
    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def execute(self, context: Any, args: Any) -> ToolResult:
        self.started.set()
        await asyncio.Event().wait()  # until cancelled
        raise AssertionError("unreachable")


async def test_stop_during_tool_keeps_conversation_valid(
    make_agent: Callable[..., Agent],
) -> None:
    store, tool = MemoryConversationStore(), Blocking()
    llm = ScriptedLlmService(
        [ScriptedResponse.tools(("echo", {"text": "a"}), ("echo", {"text": "b"}))]
    )
    agent = make_agent(llm, tools=[(tool, [])], conversation_store=store)

    async def consume() -> None:
        async for _ in agent.send_message(RequestContext(), "go", conversation_id="conv-1"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(tool.started.wait(), timeout=5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    messages = await stored(store)
    assert_valid(messages)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert "Stopped by the user" in messages[2].content
    assert "Stopped by the user" in messages[-1].content


async def test_closing_the_stream_early_is_a_stop(make_agent: Callable[..., Agent]) -> None:
    store = MemoryConversationStore()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "done"])
    agent = make_agent(llm, tools=[(EchoTool(), [])], conversation_store=store)
    stream = agent.send_message(RequestContext(), "go", conversation_id="conv-1")
    async for component in stream:
        if component.rich_component.type.value == "tool_status":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    messages = await stored(store)
    assert_valid(messages)
    assert messages[0].content == "go"


async def test_tool_limit_reached_leaves_valid_history(make_agent: Callable[..., Agent]) -> None:
    store = MemoryConversationStore()
    llm = ScriptedLlmService(then=lambda request: ScriptedResponse.tool("echo", {"text": "again"}))
    agent = make_agent(
        llm,
        tools=[(EchoTool(), [])],
        conversation_store=store,
        config=AgentConfig(max_tool_iterations=2),
    )
    out = await collect(agent, "loop forever")
    notes = [c.rich_component for c in out if c.rich_component.type.value == "notification"]
    assert notes and "stopped after 2 rounds" in notes[0].message  # type: ignore[attr-defined]
    assert len(llm.requests) == 3
    messages = await stored(store)
    assert_valid(messages)
    assert messages[-1].role == "assistant" and "stopped after 2" in messages[-1].content


async def test_before_message_agent_error_refuses_and_saves_nothing(
    make_agent: Callable[..., Agent],
) -> None:
    class Quota(LifecycleHook):
        async def before_message(self, user: User, message: str) -> str | None:
            raise AgentError("You have used your 20 questions for this hour.")

    store = MemoryConversationStore()
    llm = ScriptedLlmService()
    out = await collect(make_agent(llm, lifecycle_hooks=[Quota()], conversation_store=store), "q")
    card = content(out)[-1].rich_component
    assert card.description == "You have used your 20 questions for this hour."  # type: ignore[attr-defined]
    assert llm.requests == [] and await stored(store) == []


async def test_next_turn_sees_previous_turns(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService(["one", "two"])
    agent = make_agent(llm)
    await collect(agent, "first")
    await collect(agent, "second")
    assert [m.content for m in llm.requests[1].messages] == ["first", "one", "second"]


async def test_conversations_are_per_user(make_agent: Callable[..., Agent]) -> None:
    """Two people in one thread never share history (the thread key is not enough)."""
    from agent_core import StaticUserResolver

    store = MemoryConversationStore()
    llm = ScriptedLlmService(["to ana", "to bob"])
    ana = User(id="ana", group_memberships=["user"])
    bob = User(id="bob", group_memberships=["user"])
    await collect(
        make_agent(llm, conversation_store=store, user_resolver=StaticUserResolver(ana)),
        "secret plan",
    )
    await collect(
        make_agent(llm, conversation_store=store, user_resolver=StaticUserResolver(bob)), "hello"
    )
    assert [m.content for m in llm.requests[1].messages] == ["hello"]
