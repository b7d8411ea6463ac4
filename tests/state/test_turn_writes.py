"""On Redis a turn's conversation commit travels with the turn's completion (one script):
nobody sees it before the turn is complete, a turn whose worker stops before completing
leaves the conversation as it was, and ``record_at_end`` adds no write of its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from agent_core.conversations import Message
from agent_core.state.turns import Turn
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import User

if TYPE_CHECKING:
    from redis.asyncio import Redis

pytestmark = pytest.mark.redis

ANA = User(id="slack:T1:U1")


@pytest.fixture
async def state(redis_url: str, key_prefix: str) -> AsyncIterator[State]:
    built = build_state(StateSettings(redis_url=redis_url, key_prefix=key_prefix, claim_after=5))
    yield built
    await built.aclose()


class SavingHandler:
    """Saves a conversation for each turn, then waits until the test lets it finish."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.saved = asyncio.Event()
        self.finish = asyncio.Event()
        self.ended = asyncio.Event()
        self.release = asyncio.Event()
        self.turns: list[Turn] = []
        self.progress_at_start: list[dict[str, object]] = []

    async def __call__(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.progress_at_start.append(dict(turn.progress))
        store = self.state.conversations.for_turn(turn.writes)  # the turn's view
        conversation = await store.get_conversation("c1", ANA)
        if conversation is None:
            conversation = await store.create_conversation("c1", ANA, "")
        conversation.add_message(Message(role="user", content=f"turn {turn.attempt}"))
        await store.update_conversation(conversation)
        self.saved.set()
        await self.finish.wait()
        await turn.record_at_end(answered=True)
        self.ended.set()
        await self.release.wait()


async def stored(state: State) -> list[str]:
    conversation = await state.conversations.get_conversation("c1", ANA)
    return [] if conversation is None else [m.content for m in conversation.messages]


async def test_the_conversation_is_committed_with_the_completion(
    state: State, redis: Redis, key_prefix: str
) -> None:
    handler = SavingHandler(state)
    turn_id = await state.turns.enqueue("t1", {"n": 1})
    worker = asyncio.create_task(state.turns.run(handler))
    try:
        await asyncio.wait_for(handler.saved.wait(), 10)
        assert await stored(state) == []  # staged: written with the turn's completion
        handler.finish.set()
        await asyncio.wait_for(handler.ended.wait(), 10)
        progress = await redis.hgetall(f"{key_prefix}{{turns}}:progress:{turn_id}")
        assert "answered" not in progress and await stored(state) == []  # no write of its own
        handler.release.set()
        async with asyncio.timeout(10):
            while await state.turns.pending():
                await asyncio.sleep(0.005)  # polling the queue, with a deadline
        assert await stored(state) == ["turn 1"]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_turn_stopped_before_completing_leaves_the_conversation_as_it_was(
    state: State,
) -> None:
    """The worker stops mid-turn (a shutdown past its drain, a crash): the commit never
    happened; the turn is run again, from the conversation as it was, and commits once."""
    first = SavingHandler(state)
    await state.turns.enqueue("t1", {"n": 1})
    worker = asyncio.create_task(state.turns.run(first, consumer="dead"))
    await asyncio.wait_for(first.saved.wait(), 10)
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    assert await stored(state) == []

    state.turns.claim_after = 0.2
    second = SavingHandler(state)
    second.finish.set()
    second.release.set()
    worker = asyncio.create_task(state.turns.run(second, consumer="alive"))
    try:
        async with asyncio.timeout(10):
            while await state.turns.pending():
                await asyncio.sleep(0.01)  # polling the queue, with a deadline
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert await stored(state) == ["turn 2"]
    assert second.progress_at_start == [{}]


async def test_a_write_after_the_turn_is_over_is_made_at_once(state: State) -> None:
    """Regression guard: a task the turn started that saves after the turn ended must not
    stage into a completion that already happened."""
    later: list[asyncio.Task[None]] = []

    async def handler(turn: Turn) -> None:
        store = state.conversations.for_turn(turn.writes)  # the turn's view

        async def save_later() -> None:
            await asyncio.sleep(0.05)  # outlives the turn on purpose
            conversation = await store.create_conversation("c1", ANA, "")
            conversation.add_message(Message(role="user", content="after"))
            await store.update_conversation(conversation)

        later.append(asyncio.create_task(save_later()))

    await state.turns.enqueue("t1", {"n": 1})
    worker = asyncio.create_task(state.turns.run(handler))
    try:
        async with asyncio.timeout(10):
            while not later or await state.turns.pending():
                await asyncio.sleep(0.005)  # polling the queue, with a deadline
        await asyncio.wait_for(later[0], 10)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert await stored(state) == ["after"]
