"""A turn recorded with a ``Flag`` of the state's cache (a Slack mention joining its thread):
one atomic step on every back end, as ``build_state`` wires them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.state_factory import State, StateSettings, build_state

BACKENDS = ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture(params=BACKENDS)
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[State]:
    match request.param:
        case "memory":
            settings = StateSettings(ephemeral=True)
        case "sqlite":
            settings = StateSettings(data_dir=tmp_path)
        case _:
            url = request.getfixturevalue("redis_url")
            prefix = request.getfixturevalue("key_prefix")
            settings = StateSettings(redis_url=url, key_prefix=prefix)
    built = build_state(settings)
    yield built
    await built.aclose()


async def payloads(state: State, count: int) -> list[dict[str, object]]:
    taken = await state.turns.fetch("worker-1", count, 1.0)
    return [delivery.payload for delivery in taken]


async def test_the_turn_that_adds_the_flag_records_its_first_payload(state: State) -> None:
    added = []
    for n in range(2):
        flag = state.cache.flag(
            "slack:thread:T1:C1:1.0", 1_000.0 + n, ttl=600, first_payload={"n": n, "history": True}
        )
        turn_id = await state.turns.enqueue("slack:T1:C1:1.0", {"n": n}, flag=flag)
        assert turn_id is not None
        added.append(flag.added)
    assert added == [True, False]
    assert await payloads(state, 2) == [{"n": 0, "history": True}, {"n": 1}]
    assert await state.cache.get("slack:thread:T1:C1:1.0") == 1_000.0  # the first one's


async def test_a_retried_delivery_leaves_the_flag_alone(state: State) -> None:
    first = state.cache.flag("thread:a", ttl=600)
    assert await state.turns.enqueue("t", {"n": 0}, dedupe_key="Ev1", flag=first) is not None
    retried = state.cache.flag("thread:b", ttl=600)
    assert await state.turns.enqueue("t", {"n": 0}, dedupe_key="Ev1", flag=retried) is None
    assert (first.added, retried.added) == (True, False)
    assert await state.cache.get("thread:b") is None


async def test_a_flag_of_another_store_is_added_just_before(state: State) -> None:
    """A store on another back end cannot share the step: added first, then the turn."""
    from agent_core.state import MemoryKeyValueStore

    elsewhere = MemoryKeyValueStore()
    flag = elsewhere.flag("thread:x", first_payload={"first": True})
    await state.turns.enqueue("t", {"first": False}, flag=flag)
    assert flag.added is True and await elsewhere.get("thread:x") is True
    assert await payloads(state, 1) == [{"first": True}]
