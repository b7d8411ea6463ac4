"""Two real Teams bot processes sharing a real Redis: redeliveries, kill -9, a Redis restart
and per-conversation order, across processes.

Each bot is ``python -m bots.cli teams --scripted`` (the real host: botbuilder JWT validation
against the local fake issuer, the durable turn queue, the scripted demo model streaming its
answer); the fake Bot Connector runs in this test on 127.0.0.1 and records every reply.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.notices import UNAVAILABLE
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core.state.testing import RedisServer
from tests.adapters.teams import payloads
from tests.e2e.teams_cluster import (
    BotProcess,
    add_members,
    bot_environment,
    final_answer,
    new_messages,
)

pytestmark = pytest.mark.redis
WAIT = 20.0
"""Seconds any single expected event may take (a deadline, not a sleep)."""


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("teams-demo")


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as connector:
        add_members(connector)
        yield connector


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as client:
        yield client


@asynccontextmanager
async def running_bots(
    session: aiohttp.ClientSession, env: dict[str, str], logs: Path, count: int = 2
) -> AsyncIterator[list[BotProcess]]:
    bots = [BotProcess(env, logs / f"bot-{i}.log") for i in range(count)]
    try:
        await asyncio.gather(*(bot.ready(session) for bot in bots))
        yield bots
    finally:
        for bot in bots:
            bot.stop()


def question(fake: FakeBotConnector, text: str = "help", **kwargs: Any) -> dict[str, Any]:
    return payloads.message(text, service_url=fake.url, **kwargs)


async def answered(fake: FakeBotConnector, activity: dict[str, Any]) -> ConnectorCall:
    return await fake.wait_for(lambda c: final_answer(c, activity["id"]), timeout=WAIT)


async def the_one_running(session: aiohttp.ClientSession, bots: Sequence[BotProcess]) -> BotProcess:
    """The process whose worker is running a turn now (polled, with a deadline)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for bot in bots:
            if await bot.metric(session, "threadline_teams_active_turns") >= 1:
                return bot
        await asyncio.sleep(0.02)  # polling other processes' metrics, with a deadline
    raise TimeoutError("no process is running the turn")


async def metric_reaches(
    session: aiohttp.ClientSession, bot: BotProcess, name: str, value: float
) -> None:
    """Wait (bounded) until a process's metric reads ``value`` (it counts after its reply
    was acknowledged, so just after the fake saw it)."""
    deadline = time.monotonic() + WAIT
    while await bot.metric(session, name) != value:
        assert time.monotonic() < deadline, f"{name} never reached {value}"
        await asyncio.sleep(0.02)  # polling another process's metrics, with a deadline


async def test_a_redelivery_storm_across_two_processes_gets_one_reply(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(fake, redis_url, key_prefix, demo_dir)
    async with running_bots(session, env, tmp_path) as (one, two):
        storm = question(fake)
        statuses = await asyncio.gather(
            *(bot.post(session, fake, storm) for bot in [one, two] * 10)
        )
        assert set(statuses) == {201}
        await answered(fake, storm)
        sentinel = question(fake, "what can you do")  # same conversation and asker: after it
        assert await two.post(session, fake, sentinel) == 201
        await answered(fake, sentinel)
        assert len(new_messages(fake, storm["id"])) == 1
        assert len([c for c in fake.calls if final_answer(c, storm["id"])]) == 1
        duplicates = [
            await bot.metric(session, "threadline_teams_duplicates_total") for bot in (one, two)
        ]
        assert sum(duplicates) == 19 and all(duplicates)


async def test_kill_9_mid_turn_the_other_process_finishes_it_in_place(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(fake, redis_url, key_prefix, demo_dir, THREADLINE_DEMO_STREAM_DELAY="0.1")
    async with running_bots(session, env, tmp_path) as bots:
        asked = question(fake)
        assert await bots[0].post(session, fake, asked) == 201
        chunk = await fake.wait_for(
            lambda c: (
                c.activity_id == asked["id"]
                and bool(c.stream_info and c.stream_info.get("streamType") == "streaming")
            ),
            timeout=WAIT,
        )
        victim = await the_one_running(session, bots)
        survivor = next(bot for bot in bots if bot is not victim)
        victim.kill()
        final = await answered(fake, asked)
        assert final.stream_info is not None
        assert final.stream_info["streamId"] == chunk.stream_info["streamId"]  # in place
        assert "sample shop database" in (final.text or "")
        assert len(new_messages(fake, asked["id"])) == 1  # nothing posted twice
        completed = 'threadline_teams_turns_total{outcome="completed"}'
        await metric_reaches(session, survivor, completed, 1)


async def test_redis_restarted_mid_run_clear_errors_then_normal_answers(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    private_redis: RedisServer,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(fake, private_redis.url, key_prefix, demo_dir)
    async with running_bots(session, env, tmp_path) as (one, two):
        before = question(fake)
        assert await one.post(session, fake, before) == 201
        await answered(fake, before)

        private_redis.stop()
        for bot in (one, two):
            lost = question(fake, user="aad-bo", user_name="Bo Berg")
            assert await bot.post(session, fake, lost) == 201  # Teams must not redeliver
            told = await fake.wait_for(
                lambda c, i=lost["id"]: c.activity_id == i and c.text == UNAVAILABLE, timeout=WAIT
            )
            assert told.operation == "reply_to_activity"
            status, health = await bot.health(session)
            assert status == 503 and health["ok"] is False
            assert "Redis is unavailable" in health["state"]["detail"]

        private_redis.start()
        for bot in (one, two):
            await healthy_again(session, bot)
            after = question(fake)
            assert await bot.post(session, fake, after) == 201
            assert "sample shop database" in ((await answered(fake, after)).text or ""), (
                one.output() + "\n-----\n" + two.output()
            )


async def healthy_again(session: aiohttp.ClientSession, bot: BotProcess) -> None:
    deadline = time.monotonic() + WAIT
    while (await bot.health(session))[0] != 200:
        assert time.monotonic() < deadline, "health did not recover"
        await asyncio.sleep(0.05)  # polling a real process's health, with a deadline


async def test_two_messages_in_one_conversation_are_answered_in_order_across_processes(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(fake, redis_url, key_prefix, demo_dir)
    async with running_bots(session, env, tmp_path) as (one, two):
        first, second = question(fake, "help"), question(fake, "what can you do")
        assert await one.post(session, fake, first) == 201
        assert await two.post(session, fake, second) == 201
        first_done = await answered(fake, first)
        await answered(fake, second)
        second_started = min(c.at for c in fake.calls if c.activity_id == second["id"])
        assert second_started > first_done.at


def stop_button_of(call: ConnectorCall) -> str | None:
    for attachment in (call.body or {}).get("attachments", []) if call.body else []:
        for action in attachment.get("content", {}).get("actions", []):
            if action.get("verb") == "threadline.stop":
                return str(action["data"]["threadline_stop"])
    return None


async def test_the_stop_button_clicked_on_another_process_stops_the_answer(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(
        fake,
        redis_url,
        key_prefix,
        demo_dir,
        TEAMS_STOP_BUTTON_AFTER="0.1",
        THREADLINE_DEMO_STREAM_DELAY="0.2",
    )
    async with running_bots(session, env, tmp_path) as (one, two):
        asked = question(fake, kind="groupChat")
        assert await one.post(session, fake, asked) == 201
        card = await fake.wait_for(lambda c: stop_button_of(c) is not None, timeout=WAIT)
        runner = await the_one_running(session, (one, two))
        click = payloads.invoke(
            "adaptiveCard/action",
            {
                "action": {
                    "type": "Action.Execute",
                    "verb": "threadline.stop",
                    "data": {"threadline_stop": stop_button_of(card)},
                }
            },
            kind="groupChat",
            service_url=fake.url,
        )
        elsewhere = two if runner is one else one  # the click reaches the other process
        assert await elsewhere.post(session, fake, click) == 200
        stopped = await fake.wait_for(lambda c: c.operation == "update_activity", timeout=WAIT)
        assert stopped.text == "Stopped."
        await metric_reaches(session, runner, 'threadline_teams_turns_total{outcome="stopped"}', 1)
        assert not [
            c
            for c in fake.calls
            if final_answer(c, asked["id"]) and "sample shop" in (c.text or "")
        ]


async def test_processes_flag_serves_one_port_and_restarts_a_killed_process(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    env = bot_environment(fake, redis_url, key_prefix, demo_dir)
    supervisor = BotProcess(env, tmp_path / "supervisor.log", arguments=["--processes", "2"])
    try:
        await supervisor.ready(session)
        children = await pids_serving(session, supervisor, at_least=2)
        asked = question(fake)
        assert await supervisor.post(session, fake, asked) == 201
        await answered(fake, asked)

        os.kill(children.pop(), signal.SIGKILL)
        replaced = await pids_serving(session, supervisor, at_least=2, besides=children)
        assert replaced - children
        children |= replaced
    finally:
        assert supervisor.stop() == 0, supervisor.output()
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def pids_serving(
    session: aiohttp.ClientSession,
    bot: BotProcess,
    *,
    at_least: int,
    besides: set[int] | None = None,
) -> set[int]:
    """The process ids answering ``/healthz`` on the shared port, over fresh connections,
    until ``at_least`` distinct ones (including ``besides``) answered."""
    seen: set[int] = set()
    deadline = time.monotonic() + WAIT
    while len(seen | (besides or set())) < at_least or (besides and not seen - besides):
        assert time.monotonic() < deadline, f"only {seen} answered:\n{bot.output()}"
        try:
            seen.add((await bot.health(session))[1]["process"])
        except aiohttp.ClientError:
            await asyncio.sleep(0.05)  # a restarting process, polled with a deadline
    return seen


async def test_a_redelivery_during_an_outage_is_told_once(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    private_redis: RedisServer,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """Issue 17: Teams redelivers an activity it thinks was lost; during an outage each
    redelivery posted another "temporarily unavailable" reply."""
    env = bot_environment(fake, private_redis.url, key_prefix, demo_dir)
    async with running_bots(session, env, tmp_path, count=1) as (bot,):
        private_redis.stop()
        lost, other = question(fake, user="aad-bo", user_name="Bo Berg"), question(fake)
        for activity in (lost, lost, lost, other):
            assert await bot.post(session, fake, activity) == 201
        await fake.wait_for(
            lambda c: c.activity_id == other["id"] and c.text == UNAVAILABLE, timeout=WAIT
        )
        told = [c for c in fake.calls if c.activity_id == lost["id"] and c.text == UNAVAILABLE]
        assert len(told) == 1
        assert await bot.metric(session, "threadline_teams_duplicates_total") == 2
        private_redis.start()


async def test_hostile_and_malformed_activities_get_no_5xx_and_no_reply(
    fake: FakeBotConnector,
    session: aiohttp.ClientSession,
    redis_url: str,
    key_prefix: str,
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """Issue 17: a real ``threadline teams`` process. Before authentication: bodies that are
    not JSON, nested too deep, in an unknown charset (400 / 415, no effect). Authenticated:
    activities without ``serviceUrl``, ``from`` or ``conversation`` are acknowledged and
    dropped (they answered 500), and nothing is sent for them."""
    env = bot_environment(fake, redis_url, key_prefix, demo_dir)
    async with running_bots(session, env, tmp_path, count=1) as (bot,):
        raw = [
            (b'{"type": "message", "text": ', "application/json"),
            (b'{"a":[' * 50_000 + b"1" + b"]}" * 50_000, "application/json"),
            (b'{"type": "message"}', "application/json; charset=klingon"),
            (b"\xff\xfe\x00", "application/json"),
        ]
        for body, content_type in raw:
            async with session.post(
                bot.url + "/api/messages",
                data=body,
                headers={"Content-Type": content_type, "Connection": "close"},
            ) as response:
                assert 400 <= response.status < 500
        before = len(fake.calls)
        for missing in ("serviceUrl", "from", "conversation"):
            activity = {k: v for k, v in question(fake).items() if k != missing}
            headers = {"Authorization": fake.sign(service_url=fake.url), "Connection": "close"}
            async with session.post(
                bot.url + "/api/messages", json=activity, headers=headers
            ) as response:
                assert response.status < 500
        assert len(fake.calls) == before, bot.output()  # dropped in the request: no reply
        asked = question(fake)
        assert await bot.post(session, fake, asked) == 201  # still serving
        await answered(fake, asked)
