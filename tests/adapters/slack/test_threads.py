"""Which threads the bot takes part in, as seen by several processes sharing one cache."""

from __future__ import annotations

from adapters.slack.threads import ThreadMembership
from agent_core.state import MemoryKeyValueStore


async def test_a_thread_joined_by_another_process_is_seen_at_once() -> None:
    """Regression guard: a process that saw the thread unjoined must ask again when the
    cache is shared, or a follow-up after a mention on another process goes unanswered."""
    shared = MemoryKeyValueStore()
    here, there = ThreadMembership(shared), ThreadMembership(shared)
    assert not await here.contains("T1", "C1", "1.0")
    assert await there.join("T1", "C1", "1.0")
    assert await here.contains("T1", "C1", "1.0")
    assert not await here.join("T1", "C1", "1.0")


async def test_a_single_process_remembers_both_answers_locally() -> None:
    store = MemoryKeyValueStore()
    threads = ThreadMembership(store, shared=False)
    assert not await threads.contains("T1", "C1", "1.0")
    await store.set("slack:thread:slack:T1:C1:1.0", 0.0)  # nobody else writes: not read again
    assert not await threads.contains("T1", "C1", "1.0")
    assert await threads.join("T1", "C1", "1.0") is False  # the store already had it
    assert await threads.contains("T1", "C1", "1.0")


async def test_an_old_flag_is_refreshed_when_the_thread_is_still_busy() -> None:
    now = [0.0]
    store = MemoryKeyValueStore(clock=lambda: now[0])
    threads = ThreadMembership(store, ttl=100, clock=lambda: now[0])
    await threads.join("T1", "C1", "1.0")
    now[0] = 60.0
    assert await threads.contains("T1", "C1", "1.0")  # refreshed: lives until 160
    now[0] = 150.0
    assert await ThreadMembership(store, ttl=100, clock=lambda: now[0]).contains("T1", "C1", "1.0")
    now[0] = 261.0
    assert not await ThreadMembership(store, ttl=100).contains("T1", "C1", "1.0")
