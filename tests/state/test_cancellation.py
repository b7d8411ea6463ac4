"""Cancelling a task that is talking to Redis stops it (the user's Stop, a shutdown)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from agent_core.state.keyvalue_redis import RedisKeyValueStore
from agent_core.state.turns_redis import RedisTurnQueue

if TYPE_CHECKING:
    from redis.asyncio import Redis

TASKS, TRIALS = 30, 25


async def test_a_cancelled_task_never_carries_on(redis: Redis, key_prefix: str) -> None:
    """Regression: redis-py awaits ``asyncio.wait_for``, which on Python 3.11 can return
    normally when the cancellation lands as the write completes; a cancelled task looping
    over Redis calls then ran forever (a worker that never shut down, a Stop ignored)."""
    store = RedisKeyValueStore(redis, key_prefix=key_prefix)
    queue = RedisTurnQueue(redis, key_prefix=key_prefix)

    async def loop(n: int, busy: asyncio.Event, calls: list[int]) -> None:
        while True:
            await store.set(f"k{n}", n)
            await queue.enqueue(f"t{n}", {"n": n})
            calls.append(n)
            if len(calls) >= TASKS * 3:
                busy.set()

    for _ in range(TRIALS):
        busy, calls = asyncio.Event(), list[int]()
        tasks = [asyncio.create_task(loop(n, busy, calls)) for n in range(TASKS)]
        await asyncio.wait_for(busy.wait(), 10)
        for task in tasks:
            task.cancel()
        _, still_running = await asyncio.wait(tasks, timeout=5)
        assert not still_running
        assert all(task.cancelled() for task in tasks)
