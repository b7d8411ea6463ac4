"""``build_state``: the backend choice, and a restart that loses nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_core import (
    Agent,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.state import RedisAgentMemory, SqliteConversationStore
from agent_core.state.turns import Turn
from agent_core.state_factory import State, StateSettings, build_state
from tests.memory.contract import tool_context
from tests.state.conversation_contract import ANA, a_turn
from tests.state.turn_contract import Answers, drained, working


def test_settings_from_the_environment(tmp_path: Path) -> None:
    env = {
        "REDIS_URL": "redis://:secret@cache:6379/0",
        "THREADLINE_DATA_DIR": str(tmp_path),
        "THREADLINE_CONVERSATION_RETENTION_DAYS": "30",
        "THREADLINE_REDIS_PREFIX": "acme:",
    }
    settings = StateSettings.from_env(env)
    assert settings.backend == "redis" and settings.key_prefix == "acme:"
    assert settings.data_dir == tmp_path and settings.conversation_retention == 30 * 86400
    assert StateSettings.from_env({}, data_dir=tmp_path).backend == "sqlite"
    assert StateSettings.from_env({**env, "THREADLINE_EPHEMERAL": "1"}).backend == "memory"
    assert StateSettings.from_env(env, ephemeral=True).backend == "memory"


async def test_ephemeral_state_is_in_memory() -> None:
    state = build_state(StateSettings(ephemeral=True))
    assert state.backend == "memory"
    assert (await state.health()).ok
    await state.aclose()


async def _write_everything(state: State) -> str:
    conversation = await state.conversations.create_conversation("slack:T1:C1:1.0", ANA, "q")
    a_turn(conversation, "top customers?", "Acme")
    await state.conversations.update_conversation(conversation)
    ctx = tool_context()
    await state.memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
    await state.memory.save_text_memory("fiscal year starts in April", ctx)
    assert await state.dedupe.first_time("slack:Ev1")
    await state.cache.set("slack:identity:user:T1:U1", {"name": "ana"}, ttl=3600)
    await state.records.set("slack:installation:T1", {"bot_token": "xoxb-1"})
    assert (await state.rate_limiter.hit("quota:ana", limit=1, window=3600)).allowed
    turn_id = await state.turns.enqueue("slack:T1:C1:1.0", {"text": "pending"}, dedupe_key="E2")
    assert turn_id is not None
    return turn_id


async def _read_everything(state: State) -> None:
    stored = await state.conversations.get_conversation("slack:T1:C1:1.0", ANA)
    assert stored is not None and len(stored.messages) == 4
    ctx = tool_context()
    [hit] = await state.memory.search_similar_usage("orders by status", ctx)
    assert hit.memory.args == {"sql": "S"}
    assert [m.content for m in await state.memory.get_recent_text_memories(ctx)] == [
        "fiscal year starts in April"
    ]
    assert not await state.dedupe.first_time("slack:Ev1")
    assert await state.cache.get("slack:identity:user:T1:U1") == {"name": "ana"}
    assert await state.records.get("slack:installation:T1") == {"bot_token": "xoxb-1"}
    assert not (await state.rate_limiter.hit("quota:ana", limit=1, window=3600)).allowed
    assert await state.turns.enqueue("slack:T1:C1:1.0", {"text": "again"}, dedupe_key="E2") is None
    answers = Answers(1)
    async with working(state.turns, answers):
        await answers.wait()
        await drained(state.turns)
    [turn] = answers.turns
    assert isinstance(turn, Turn) and turn.payload == {"text": "pending"}


async def test_sqlite_state_survives_a_restart(tmp_path: Path) -> None:
    """Everything written through the SQLite stores is there after a restart (new objects
    on the same data directory)."""
    state = build_state(StateSettings(data_dir=tmp_path))
    assert state.backend == "sqlite" and isinstance(state.conversations, SqliteConversationStore)
    await _write_everything(state)
    await state.aclose()
    assert sorted(p.name for p in tmp_path.glob("*.db")) == [
        "conversations.db",
        "memory.db",
        "state.db",
    ]

    restarted = build_state(StateSettings(data_dir=tmp_path))
    try:
        assert (await restarted.health()).ok
        await _read_everything(restarted)
    finally:
        await restarted.aclose()


async def test_redis_state_is_shared_by_processes(redis_url: str, key_prefix: str) -> None:
    settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix)
    one, two = build_state(settings), build_state(settings)
    try:
        assert one.backend == "redis" and isinstance(one.memory, RedisAgentMemory)
        assert (await one.health()).ok
        await _write_everything(one)
        await _read_everything(two)
    finally:
        await one.aclose()
        await two.aclose()


async def test_agent_on_sqlite_state_remembers_across_restarts(tmp_path: Path) -> None:
    user = User(id="slack:T1:U1", group_memberships=["user"], metadata={"workspace_id": "T1"})

    def agent(state: State, reply: str) -> Agent:
        return Agent(
            llm_service=ScriptedLlmService([reply]),
            tool_registry=ToolRegistry(),
            user_resolver=StaticUserResolver(user),
            agent_memory=state.memory,
            conversation_store=state.conversations,
            lifecycle_hooks=[state.rate_limit_hook(limit=10, window=3600)],
        )

    async def ask(target: Agent, text: str) -> None:
        [_ async for _ in target.send_message(RequestContext(), text, conversation_id="c1")]

    state = build_state(StateSettings(data_dir=tmp_path))
    await ask(agent(state, "first answer"), "first question")
    await state.aclose()
    restarted = build_state(StateSettings(data_dir=tmp_path))
    try:
        await ask(agent(restarted, "second answer"), "second question")
        stored = await restarted.conversations.get_conversation("c1", user)
        assert stored is not None
        assert [m.content for m in stored.messages] == [
            "first question",
            "first answer",
            "second question",
            "second answer",
        ]
    finally:
        await restarted.aclose()


def test_build_state_never_touches_the_event_loop_thread_for_io(tmp_path: Path) -> None:
    """Constructing SQLite state queues its setup on the databases' own threads."""
    state = build_state(StateSettings(data_dir=tmp_path / "fresh"))
    asyncio.run(state.aclose())
    assert (tmp_path / "fresh" / "state.db").exists()
