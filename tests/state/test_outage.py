"""Redis stopped mid-run: clear errors and a red health, then normal service again when it
returns on the same port, without restarting anything."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agent_core import (
    Agent,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.components.feedback import StatusCardComponent
from agent_core.errors import StateUnavailableError
from agent_core.state.testing import RedisServer
from agent_core.state_factory import State, StateSettings, build_state
from tests.memory.contract import tool_context
from tests.state.conversation_contract import ANA
from tests.state.turn_contract import Answers, working


@pytest.fixture
async def state(private_redis: RedisServer) -> AsyncIterator[State]:
    settings = StateSettings(
        redis_url=private_redis.url, claim_after=0.5, memory_refresh_interval=0
    )
    state = build_state(settings)
    yield state
    await state.aclose()


def operations(state: State) -> dict[str, Callable[[], Awaitable[Any]]]:
    ctx = tool_context()
    return {
        "conversation get": lambda: state.conversations.get_conversation("c1", ANA),
        "conversation create": lambda: state.conversations.create_conversation("c1", ANA, "q"),
        "conversation list": lambda: state.conversations.list_conversations(ANA),
        "memory save": lambda: state.memory.save_tool_usage("q", "run_sql", {}, ctx),
        "memory search": lambda: state.memory.search_similar_usage("q", ctx),
        "memory notes": lambda: state.memory.search_text_memories("q", ctx),
        "dedupe": lambda: state.dedupe.first_time("slack:Ev1"),
        "cache": lambda: state.cache.get("slack:identity:user:T1:U1"),
        "records": lambda: state.records.set("slack:installation:T1", {"t": 1}),
        "quota": lambda: state.rate_limiter.hit("quota:ana", limit=100, window=60),
        "enqueue": lambda: state.turns.enqueue("t1", {"n": 1}),
    }


async def test_every_store_fails_clearly_then_recovers(
    state: State, private_redis: RedisServer
) -> None:
    for run in operations(state).values():
        await run()
    private_redis.stop()

    for name, run in operations(state).items():
        with pytest.raises(StateUnavailableError, match="Redis is unavailable"):
            await run()
            pytest.fail(f"{name} did not report the outage")
    health = await state.health()
    assert not health.ok and "Redis is unavailable" in health.detail

    private_redis.start()  # same port, empty: persistence is off
    assert (await state.health()).ok
    for run in operations(state).values():
        await run()
    assert await state.memory.search_similar_usage("q", tool_context()) != []


async def test_a_worker_rides_out_an_outage(state: State, private_redis: RedisServer) -> None:
    before, after = Answers(1), Answers(1)

    async def answer(turn: Any) -> None:
        await (before if turn.payload["n"] == 0 else after)(turn)

    async with working(state.turns, answer):
        await state.turns.enqueue("t1", {"n": 0})
        await before.wait()
        private_redis.stop()
        with pytest.raises(StateUnavailableError):
            await state.turns.enqueue("t1", {"n": 1})
        private_redis.start()
        await state.turns.enqueue("t1", {"n": 1})
        await after.wait()


async def test_the_agent_says_plainly_it_is_unavailable_then_answers(
    state: State, private_redis: RedisServer
) -> None:
    user = User(id="slack:T1:U1", group_memberships=["user"], metadata={"workspace_id": "T1"})
    agent = Agent(
        llm_service=ScriptedLlmService(["first", "second"]),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(user),
        agent_memory=state.memory,
        conversation_store=state.conversations,
        lifecycle_hooks=[state.rate_limit_hook(limit=10, window=60)],
    )

    async def ask(text: str) -> list[Any]:
        return [c async for c in agent.send_message(RequestContext(), text, conversation_id="c")]

    await ask("hello")
    private_redis.stop()
    cards = [
        c.rich_component
        for c in await ask("are you there?")
        if isinstance(c.rich_component, StatusCardComponent)
    ]
    assert [card.description for card in cards] == [
        "Threadline is temporarily unavailable. Please try again shortly."
    ]
    private_redis.start()
    texts = [c.rich_component for c in await ask("and now?") if c.rich_component.type == "text"]
    assert texts and texts[-1].content == "second"
