"""What keeps a turn and the package cheap, without changing what they do: names load on
first use, nothing is built while importing, a new conversation is stored by its turn's one
commit, the in-memory store has a cap, and the default system prompt is built once."""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import agent_core
import agent_core.components
from agent_core import (
    Agent,
    InMemoryAgentMemory,
    MemoryConversationStore,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.conversations import Message
from agent_core.prompts import DefaultSystemPromptBuilder, _Today
from agent_core.schedules.testing import ManualClock

ROOT = Path(__file__).resolve().parents[2]
ANA = User(id="ana", username="Ana", group_memberships=["user"])


async def drain(stream: AsyncIterator[object]) -> None:
    async for _ in stream:
        pass


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return set(out.split())


def test_import_agent_core_loads_no_model_and_the_agent_builds_none() -> None:
    """Regression: ``import agent_core`` imported every module and built a user model at
    import (which loads pydantic's plugin machinery and ``importlib.metadata``)."""
    bare = loaded_after("import agent_core")
    assert not {"pydantic", "agent_core.agent", "agent_core.components.base"} & bare
    agent = loaded_after("from agent_core import Agent")
    assert "agent_core.agent" in agent
    assert (
        not {
            "pydantic.plugin._loader",
            "agent_core.audit",
            "agent_core.memory.index",
            "agent_core.components.data",
        }
        & agent
    )


def test_every_exported_name_resolves() -> None:
    for package in (agent_core, agent_core.components):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
        assert set(package.__all__) <= set(dir(package))


async def test_a_new_conversation_is_stored_by_its_turns_one_commit() -> None:
    """A new conversation is written when its turn ends, not when it is opened: a first turn
    that fails stores only its question (marked unanswered, issue 17), with nothing before."""
    store = MemoryConversationStore()
    agent = Agent(
        llm_service=ScriptedLlmService(then=RuntimeError("model down")),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(ANA),
        agent_memory=InMemoryAgentMemory(),
        conversation_store=store,
    )
    [_ async for _ in agent.send_message(RequestContext(), "hi", conversation_id="c1")]
    failed = await store.get_conversation("c1", ANA)
    assert failed is not None and [m.role for m in failed.messages] == ["user", "assistant"]
    assert failed.messages[0].metadata == {"unanswered": True}
    asked = asyncio.Event()

    def answer(_request: object) -> ScriptedResponse:
        asked.set()  # the model is asked: the conversation is open
        return ScriptedResponse(text="hello", latency=0.2)

    agent.llm_service = ScriptedLlmService([answer])
    turn = asyncio.ensure_future(
        drain(agent.send_message(RequestContext(), "again", conversation_id="c2"))
    )
    await asked.wait()
    assert await store.get_conversation("c2", ANA) is None  # open, not yet written
    await turn
    stored = await store.get_conversation("c2", ANA)
    assert stored is not None and [m.content for m in stored.messages] == ["again", "hello"]


async def test_the_memory_store_forgets_the_least_recently_used_past_its_cap() -> None:
    store = MemoryConversationStore(max_conversations=3)
    bob = User(id="bob")
    for name, user in (("a", ANA), ("b", ANA), ("c", bob)):
        conversation = await store.create_conversation(name, user, "")
        conversation.add_message(Message(role="user", content=name))
        await store.update_conversation(conversation)
    assert await store.get_conversation("a", ANA) is not None  # "a" is used again: kept
    await store.create_conversation("d", bob, "")
    assert await store.get_conversation("b", ANA) is None
    assert [c.id for c in await store.list_conversations(ANA)] == ["a"]
    assert sorted(c.id for c in await store.list_conversations(bob)) == ["c", "d"]


async def test_a_conversation_is_read_as_its_reader() -> None:
    """The store keeps no copy of the user: whoever reads their conversation gets it with
    themselves as they are now (their groups may have changed)."""
    store = MemoryConversationStore()
    await store.update_conversation(await store.create_conversation("c1", ANA, ""))
    promoted = ANA.model_copy(update={"group_memberships": ["user", "admin"]})
    loaded = await store.get_conversation("c1", promoted)
    assert loaded is not None and loaded.user.is_admin


def test_the_default_prompt_is_built_once_per_date_user_and_tools() -> None:
    builder = DefaultSystemPromptBuilder("Be brief.")
    first = asyncio.run(builder.build_system_prompt(ANA, []))
    again = asyncio.run(builder.build_system_prompt(ANA, []))
    other = asyncio.run(builder.build_system_prompt(User(id="bo", username="Bo"), []))
    assert first is again and "Ana" in first and "Bo" in other


def test_the_date_is_looked_up_again_after_midnight() -> None:
    """The prompt's date is the clock's UTC date, worked out again once midnight passed."""
    clock = ManualClock.at(dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=dt.UTC))
    today = _Today(clock)
    assert today() == "2026-12-31" and today() == "2026-12-31"
    assert today.until == dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp()
    clock.advance(1)
    assert today() == "2027-01-01"
