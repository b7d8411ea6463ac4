"""Issue 17: a Redis outage, completely, through real Slack bot processes.

Two ``threadline slack`` processes (``tests.e2e.slack_runner``) on one Redis the test stops
and starts, the fake Web API in the test process. Found before: a plain follow-up in a bot
thread during the outage was dropped silently (``_is_follow_up`` answered False), a Slack
retry during the outage posted a second notice, and the re-run of an answer that was
streaming when Redis went down left its "temporarily unavailable" card (never recorded).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent_core.state.testing import RedisServer
from tests.e2e.slack_cluster import (
    WAIT,
    BotProcess,
    Cluster,
    answers,
    follow_up,
    mention,
    slack_cluster,
    texts,
)

pytestmark = pytest.mark.redis

NOTICE = "temporarily unavailable"


def notices(cluster: Cluster, thread_ts: str) -> list[str]:
    return [t for t in texts(cluster.fake, thread_ts) if NOTICE in t]


async def logged(cluster: Cluster, text: str) -> None:
    """Until a process logs ``text`` (each process's log lines are events)."""

    async def one(bot: BotProcess) -> None:
        async with bot._changed:
            await bot._changed.wait_for(lambda: any(text in line for line in bot.lines))

    waits = [asyncio.create_task(one(bot)) for bot in cluster.bots]
    try:
        done, _ = await asyncio.wait(waits, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
        assert done, f"nobody logged {text!r}\n{cluster.output()}"
    finally:
        for wait in waits:
            wait.cancel()


async def healthy(cluster: Cluster) -> None:
    """Until every process reports its state healthy again (a bounded poll)."""
    deadline = time.monotonic() + WAIT
    while {(await cluster.send.health(bot.port))[0] for bot in cluster.bots} != {200}:
        assert time.monotonic() < deadline, cluster.output()
        await asyncio.sleep(0.05)  # polling other processes' health, with a deadline


async def test_follow_ups_in_bot_threads_are_told_and_others_are_not(
    private_redis: RedisServer, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(private_redis.url, key_prefix, tmp_path) as cluster:
        a, b = (bot.port for bot in cluster.bots)
        await cluster.send.event(a, mention("first", ts="100.000100"), event_id="Ev1")
        await cluster.wait_for(lambda f: bool(answers(f, "100.000100")), "the first answer")

        private_redis.stop()
        for port, ts in ((a, "100.000200"), (b, "100.000300")):  # b never saw the thread
            reply = follow_up("and then?", ts=ts, thread_ts="100.000100")
            assert await cluster.send.event(port, reply, event_id=f"Ev{ts}") == 200
        await cluster.wait_for(
            lambda f: len(notices(cluster, "100.000100")) == 2, "a notice for each follow-up"
        )
        human = follow_up("lunch?", ts="900.000200", thread_ts="900.000100")  # not the bot's
        assert await cluster.send.event(b, human, event_id="EvHuman") == 200
        # b read the thread from Slack and remembered it: thread reads are paced, and a
        # second follow-up within the minute was once left untold
        again = follow_up("still there?", ts="100.000400", thread_ts="100.000100")
        assert await cluster.send.event(b, again, event_id="EvAgain") == 200
        await cluster.wait_for(
            lambda f: len(notices(cluster, "100.000100")) == 3,
            "a notice for the second follow-up too",
        )
        private_redis.start()
        await healthy(cluster)
        assert texts(cluster.fake, "900.000100") == []


async def test_a_retry_during_the_outage_is_not_told_twice(
    private_redis: RedisServer, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(private_redis.url, key_prefix, tmp_path, processes=1) as cluster:
        [bot] = cluster.bots
        private_redis.stop()
        event = mention("anyone?", ts="200.000100")
        for retry in range(3):  # Slack retries what it thinks was lost
            status = await cluster.send.event(bot.port, event, event_id="EvR", retry=retry)
            assert status == 200
        await cluster.wait_for(lambda f: bool(notices(cluster, "200.000100")), "the notice")
        await cluster.send.event(bot.port, mention("other", ts="201.000100"), event_id="EvO")
        await cluster.wait_for(lambda f: bool(notices(cluster, "201.000100")), "a 2nd notice")
        assert len(notices(cluster, "200.000100")) == 1
        private_redis.start()


async def test_the_re_run_after_an_outage_takes_back_what_was_posted_during_it(
    key_prefix: str, tmp_path: Path
) -> None:
    """Redis stops while an answer streams (and comes back with its data): the answer
    finishes, but its turn cannot be marked done (the conversation commit travels with that
    mark) and nothing of it can be recorded. Once Redis is back the turn runs again and takes
    back what the first run posted: the thread ends with one answer and no notice."""
    redis = RedisServer(tmp_path / "redis", persistent=True)
    redis.start()
    try:
        async with slack_cluster(redis.url, key_prefix, tmp_path) as cluster:
            fake, a = cluster.fake, cluster.bots[0].port
            await cluster.send.event(a, mention("slow one", ts="300.000100"), event_id="EvS")
            await cluster.wait_for(lambda f: bool(f.calls_to("chat.appendStream")), "streaming")
            redis.stop()
            await logged(cluster, "could not mark turn")  # the run ended; the turn is pending
            assert fake.calls_to("chat.stopStream")  # the first run's answer, posted
            redis.start()
            await cluster.wait_for(
                lambda f: not notices(cluster, "300.000100") and len(answers(f, "300.000100")) == 1,
                "the re-run's answer, alone",
            )
            await cluster.drained()
            [reply] = answers(fake, "300.000100")
            assert reply.text.startswith("Answer to «slow one»")
            assert [m.text for m in fake.thread("C1", "300.000100")] == [reply.text]
    finally:
        redis.stop()
