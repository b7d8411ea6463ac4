"""A checkpointer keyed by conversation id: every step recorded, as JSON, inspectable."""

from __future__ import annotations

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_core import RequestContext, ScriptedLlmService, ScriptedResponse
from tests.support.tools import EchoTool as Echo

from .conftest import ANA, build, collect, graph_agent


async def test_get_state_shows_the_finished_turn(saver: InMemorySaver) -> None:
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "All done."])
    agent = graph_agent(llm, tools=[Echo()], checkpointer=saver)
    await collect(agent, "go")
    checkpoint = await agent.get_state("conv-1")
    assert checkpoint is not None and checkpoint.turn is not None
    assert checkpoint.next_nodes == []
    turn = checkpoint.turn
    assert turn.message == "go" and turn.user is not None and turn.user.id == ANA.id
    assert turn.conversation is not None
    roles = [m.role for m in turn.conversation.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert turn.tool_iterations == 1 and turn.saved and turn.response is not None
    assert turn.response.content == "All done."


async def test_every_node_is_a_checkpointed_step_in_order(saver: InMemorySaver) -> None:
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "done"])
    agent = graph_agent(llm, tools=[Echo()], checkpointer=saver)
    await collect(agent, "go")
    config = {"configurable": {"thread_id": "conv-1"}}
    history = [s async for s in agent.graph.aget_state_history(config)]  # type: ignore[arg-type]
    steps = [s.next for s in reversed(history)]
    assert steps == [
        ("__start__",),
        ("initialize",),
        ("prepare",),
        ("think",),
        ("tools",),
        ("think",),
        ("finalize",),
        (),
    ]


async def test_each_conversation_is_its_own_thread(saver: InMemorySaver) -> None:
    agent = graph_agent(ScriptedLlmService(["one", "two"]), checkpointer=saver)
    await collect(agent, "first", conversation_id="thread-a")
    await collect(agent, "second", conversation_id="thread-b")
    a, b = await agent.get_state("thread-a"), await agent.get_state("thread-b")
    assert a is not None and a.turn is not None and a.turn.message == "first"
    assert b is not None and b.turn is not None and b.turn.message == "second"
    assert await agent.get_state("never-used") is None


async def test_checkpoints_hold_json_and_no_credentials(saver: InMemorySaver) -> None:
    """The request's headers and cookies (credentials) are never written to a checkpoint,
    and no live object is: the stored state is plain JSON."""
    context = RequestContext(
        headers={"Authorization": "Bearer s3cret-token"},
        cookies={"session": "c00kie-value"},
        metadata={"platform": "slack", "workspace_id": "T1"},
    )
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "a"}), "done"])
    agent = graph_agent(llm, tools=[Echo()], checkpointer=saver)
    await collect(agent, "go", context=context)
    snapshot = await agent.graph.aget_state({"configurable": {"thread_id": "conv-1"}})
    text = json.dumps(snapshot.values)  # raises on anything that is not JSON
    assert "s3cret-token" not in text and "c00kie-value" not in text
    assert "agent_memory" not in text
    assert snapshot.values["turn"]["tool_context"]["metadata"]["request"]["workspace_id"] == "T1"


async def test_a_new_conversation_gets_its_id_before_the_graph_starts(
    saver: InMemorySaver,
) -> None:
    agent = graph_agent(ScriptedLlmService(["hello"]), checkpointer=saver)
    await collect(agent, "hi", conversation_id=None)
    threads = {c.config["configurable"]["thread_id"] async for c in saver.alist(None)}
    assert len(threads) == 1 and "" not in threads
    (thread,) = threads
    checkpoint = await agent.get_state(thread)
    assert checkpoint is not None and checkpoint.turn is not None
    assert checkpoint.turn.conversation_id == thread


async def test_get_state_needs_a_checkpointer() -> None:
    agent = build(ScriptedLlmService(["hi"]))
    with pytest.raises(RuntimeError, match="checkpointer"):
        await agent.get_state("conv-1")  # type: ignore[attr-defined]


async def test_a_checkpoint_holds_the_turn_not_the_whole_history(saver: InMemorySaver) -> None:
    """LangGraph writes a checkpoint per step: the history is in the conversation store, so
    each checkpoint carries only the messages of its own turn."""
    agent = graph_agent(ScriptedLlmService(["one", "two"]), checkpointer=saver)
    await collect(agent, "first")
    await collect(agent, "second")
    checkpoint = await agent.get_state("conv-1")
    assert checkpoint is not None and checkpoint.turn is not None
    assert checkpoint.turn.committed_messages == 2
    assert checkpoint.turn.conversation is not None
    assert [m.content for m in checkpoint.turn.conversation.messages] == ["second", "two"]
