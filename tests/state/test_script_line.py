"""``ScriptLine``: concurrent calls share round trips, each gets its own reply, and the line
rides out what redis-py's client rides out (a dropped connection, a script Redis lost, a
cancelled caller)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from agent_core.state.redis_line import ScriptLine

if TYPE_CHECKING:
    from redis.asyncio import Redis

pytestmark = pytest.mark.redis

COUNT = "return redis.call('INCRBY', KEYS[1], ARGV[1])"


async def test_concurrent_calls_share_a_round_trip_and_get_their_own_replies(
    redis: Redis, key_prefix: str
) -> None:
    line = ScriptLine(redis, "return ARGV[1] .. KEYS[1]")
    await line(["k"], [0])  # connected, the script loaded
    before = line.round_trips
    replies = await asyncio.gather(*(line([f"k{n}"], [n]) for n in range(20)))
    assert replies == [f"{n}k{n}" for n in range(20)]
    assert line.round_trips - before == 2  # the first call alone, the 19 queued behind it


async def test_a_reply_error_is_its_callers_alone(redis: Redis, key_prefix: str) -> None:
    from redis.exceptions import ResponseError

    line = ScriptLine(redis, COUNT)
    key = key_prefix + "n"
    ok, bad = await asyncio.gather(
        line([key], [1]), line([key], ["not a number"]), return_exceptions=True
    )
    assert ok == 1
    assert isinstance(bad, ResponseError)
    assert await line([key], [2]) == 3


async def test_a_script_redis_lost_is_loaded_again(redis: Redis, key_prefix: str) -> None:
    line = ScriptLine(redis, COUNT)
    key = key_prefix + "n"
    assert await line([key], [1]) == 1
    await redis.script_flush()
    assert await asyncio.gather(line([key], [1]), line([key], [1])) == [2, 3]


async def test_a_dropped_connection_is_replaced(redis: Redis, key_prefix: str) -> None:
    line = ScriptLine(redis, COUNT)
    key = key_prefix + "n"
    assert await line([key], [1]) == 1
    assert await redis.client_kill_filter(_type="normal", skipme=True) >= 1
    assert await line([key], [1]) == 2


async def test_a_cancelled_caller_queued_behind_a_round_is_never_sent(
    redis: Redis, key_prefix: str
) -> None:
    """Its call was not written yet: cancelling it leaves Redis as it was, and the line
    keeps serving (nobody waits for a lead the cancelled caller would have had)."""
    line = ScriptLine(redis, COUNT)
    key = key_prefix + "n"
    await line([key], [0])  # connected, the script loaded
    first = asyncio.create_task(line([key], [1]))
    await asyncio.sleep(0)  # ``first`` leads a round
    queued = asyncio.create_task(line([key], [10]))
    await asyncio.sleep(0)
    queued.cancel()
    assert await first == 1
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert await line([key], [100]) == 101


async def test_a_round_redis_does_not_answer_times_out_then_the_line_recovers(
    redis_url: str, key_prefix: str
) -> None:
    """The line times each round itself (its connection has no socket timeout of its own):
    a server that holds the call (``CLIENT PAUSE``) fails it within the client's timeout,
    tried twice, and the next call after the pause is served on a new connection."""
    from redis.exceptions import TimeoutError as RedisTimeout

    from agent_core.state.redis_client import connect_redis

    client = connect_redis(redis_url, timeout=0.2)
    line = ScriptLine(client, COUNT)
    key = key_prefix + "n"
    try:
        assert await line([key], [1]) == 1
        await client.execute_command("CLIENT", "PAUSE", 1500, "WRITE")
        started = asyncio.get_running_loop().time()
        with pytest.raises(RedisTimeout):
            await line([key], [1])
        assert asyncio.get_running_loop().time() - started < 1.2
        await client.execute_command("CLIENT", "UNPAUSE")
        assert await line([key], [1]) in (2, 3, 4)  # a timed-out call may have run after all
    finally:
        await client.execute_command("CLIENT", "UNPAUSE")
        await client.aclose()


SLOW_COUNT = """
for _ = 1, tonumber(ARGV[2]) do end
return redis.call('INCRBY', KEYS[1], ARGV[1])
"""


async def test_a_leader_cancelled_mid_round_hands_the_others_calls_on(
    redis: Redis, key_prefix: str
) -> None:
    """The calls that went out with a cancelled leader's round are sent again by the next
    leader (as a retry on a dropped connection would): each gets a reply of its own, and
    the line stays in step with Redis."""
    line = ScriptLine(redis, SLOW_COUNT)
    key = key_prefix + "n"
    await line([key], [0, 0])  # connected, the script loaded
    first = asyncio.create_task(line([key], [1, 2_000_000]))
    await asyncio.sleep(0)  # ``first`` leads a round
    leader = asyncio.create_task(line([key], [10, 2_000_000]))
    other = asyncio.create_task(line([key], [100, 0]))
    rounds = line.round_trips
    assert await first == 1
    while line.round_trips == rounds:  # ``leader`` leads the next round: both calls
        await asyncio.sleep(0)
    leader.cancel()
    assert await other in (101, 111, 201, 211)  # the call may have run in both rounds
    with pytest.raises(asyncio.CancelledError):
        await leader
    assert await line([key], [1000, 0]) == int(await redis.get(key))
