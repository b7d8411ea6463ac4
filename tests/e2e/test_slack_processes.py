"""Two real Slack bot processes, one real Redis, the fake Slack Web API: nothing is lost or
answered twice when Slack retries across processes, a process is killed mid-answer, or
Redis restarts; turns of one thread are answered in order whichever process gets them.

Every wait has a deadline (``slack_cluster.WAIT``); the processes are the real
``threadline slack`` wiring (``tests.e2e.slack_runner``), the last test the CLI itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.controls import STOP_ACTION
from adapters.slack.testing import FakeSlackApi, Message
from agent_core.state.testing import RedisServer
from tests.bots.slack.harness import add_users
from tests.e2e.slack_cluster import (
    WAIT,
    BotProcess,
    Cluster,
    SlackSender,
    answers,
    bot_env,
    follow_up,
    mention,
    slack_cluster,
    texts,
)

pytestmark = pytest.mark.redis


def answered(thread_ts: str, count: int = 1) -> object:
    return lambda fake: len(answers(fake, thread_ts)) >= count


async def test_a_retry_storm_across_both_processes_gets_one_reply_per_event(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        a, b = (bot.port for bot in cluster.bots)
        deliveries = []
        for n in range(6):
            event = mention(f"question {n}", ts=f"{100 + n}.000100")
            for retry, port in enumerate((a, b, a, b)):  # Slack's retries land anywhere
                deliveries.append(cluster.send.event(port, event, event_id=f"Ev{n}", retry=retry))
            twin = {**event, "type": "message", "channel_type": "channel"}
            deliveries.append(cluster.send.event(b, twin, event_id=f"EvMsg{n}"))
        assert set(await asyncio.gather(*deliveries)) == {200}

        await cluster.wait_for(
            lambda f: all(answered(f"{100 + n}.000100")(f) for n in range(6)), "6 answers"
        )
        await cluster.drained()
        for n in range(6):
            [reply] = answers(cluster.fake, f"{100 + n}.000100")
            assert reply.text == f"Answer to «question {n}» after 0 earlier messages."
        created = cluster.fake.calls_to("chat.postMessage") + cluster.fake.calls_to(
            "chat.startStream"
        )
        assert sum("Working on it" not in (c.args.get("text") or "") for c in created) == 6


async def test_kill_9_mid_answer_finishes_on_the_other_process_without_a_duplicate(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """No Stop message here: one posted in the instant between Slack's answer and the turn's
    record, then killed, is the crash window a record cannot close (a loaded CI run hit it)."""
    async with slack_cluster(redis_url, key_prefix, tmp_path, stop_after=60) as cluster:
        fake = cluster.fake
        assert (
            await cluster.send.event(
                cluster.bots[0].port, mention("slow one", ts="200.000100"), event_id="EvSlow"
            )
            == 200
        )
        # the answer is streaming (its first message recorded on the turn): kill its process
        await cluster.wait_for(lambda f: bool(f.calls_to("chat.appendStream")), "streaming")
        token = fake.calls_to("chat.appendStream")[0].token
        victim = next(bot for bot in cluster.bots if bot.token == token)
        survivor = next(bot for bot in cluster.bots if bot is not victim)
        partial = fake.calls_to("chat.startStream")[0]
        await victim.kill()

        await cluster.wait_for(answered("200.000100"), "the answer from the survivor")
        await cluster.drained()
        [reply] = answers(fake, "200.000100")
        assert reply.text.startswith("Answer to «slow one» after 0 earlier messages.")
        assert [m.text for m in fake.thread("C1", "200.000100")] == [reply.text]
        assert {c.token for c in fake.calls_to("chat.stopStream")} == {survivor.token}
        deleted = [c for c in fake.calls_to("chat.delete") if c.token == survivor.token]
        assert deleted and deleted[0].args["ts"] == fake.messages[0].ts  # the partial answer
        assert partial.token == victim.token


async def test_sigterm_mid_answer_finishes_the_answer_before_exiting(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """A rolling restart: the process stops taking turns, finishes the one it runs (no
    re-run elsewhere, nothing deleted) and exits cleanly."""
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        fake = cluster.fake
        await cluster.send.event(
            cluster.bots[1].port, mention("slow two", ts="250.000100"), event_id="E"
        )
        await cluster.wait_for(lambda f: bool(f.calls_to("chat.appendStream")), "streaming")
        token = fake.calls_to("chat.appendStream")[0].token
        leaving = next(bot for bot in cluster.bots if bot.token == token)
        assert await leaving.stop() == 0, leaving.output()
        [reply] = answers(fake, "250.000100")
        assert reply.text.startswith("Answer to «slow two» after 0 earlier messages.")
        assert {c.token for c in fake.calls_to("chat.stopStream")} == {leaving.token}
        # only the leaving process's own "Working on it… Stop" message was tidied away
        assert {c.token for c in fake.calls_to("chat.delete")} <= {leaving.token}
        await cluster.drained()


async def test_stop_clicked_on_the_other_process_stops_the_answer(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        fake = cluster.fake
        a, b = (bot.port for bot in cluster.bots)
        await cluster.send.event(a, mention("slow, then stop", ts="300.000100"), event_id="Ev3")
        await cluster.wait_for(
            lambda f: any(b.get("type") == "actions" for m in f.visible("C1") for b in m.blocks),
            "the Stop button",
        )
        stop = next(m for m in fake.visible("C1") if any(b["type"] == "actions" for b in m.blocks))
        turn_id = stop.blocks[-1]["elements"][0]["value"]
        assert await cluster.send.action(b, STOP_ACTION, turn_id, user="U2", message=stop) == 200
        assert await cluster.send.action(b, STOP_ACTION, turn_id, user="U1", message=stop) == 200

        await cluster.wait_for(lambda f: stop.deleted, "the Stop message to go")
        await cluster.drained()
        [reply] = fake.thread("C1", "300.000100")
        assert reply.text.endswith("_(Stopped.)_") and not reply.streaming
        assert reply.text.startswith("Answer to «slow") and reply.text.count("More detail") < 3


async def test_two_messages_in_one_thread_are_answered_in_order_across_processes(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        a, b = (bot.port for bot in cluster.bots)
        for root in ("400.000100", "500.000100"):  # two threads at once
            await cluster.send.event(a, mention("first", ts=root), event_id=f"Ev{root}")
        for n, port in ((1, b), (2, a)):  # follow-ups land on either process, mid-answer
            for root in ("400.000100", "500.000100"):
                message = follow_up(f"then {n}", ts=f"{root[:3]}.00010{n + 1}", thread_ts=root)
                assert await cluster.send.event(port, message, event_id=f"Ev{root}-{n}") == 200

        for root in ("400.000100", "500.000100"):
            await cluster.wait_for(answered(root, 3), f"3 answers in {root}")
            assert [m.text for m in answers(cluster.fake, root)] == [
                "Answer to «first» after 0 earlier messages.",
                "Answer to «then 1» after 2 earlier messages.",
                "Answer to «then 2» after 4 earlier messages.",
            ]
        await cluster.drained()


async def test_redis_stopped_and_restarted_mid_run(
    private_redis: RedisServer, key_prefix: str, tmp_path: Path
) -> None:
    """Regression: ``connect_redis`` gave the asyncio pool redis-py's *sync* ``Retry``, so
    no command was retried and every pooled connection opened before the restart failed
    once after it: the first questions after Redis came back were told "temporarily
    unavailable" (fixed by ``redis.asyncio.retry.Retry`` in agent_core/state)."""
    async with slack_cluster(private_redis.url, key_prefix, tmp_path) as cluster:
        send, fake = cluster.send, cluster.fake
        a, b = (bot.port for bot in cluster.bots)
        await send.event(a, mention("before", ts="600.000100"), event_id="Ev6")
        await cluster.wait_for(answered("600.000100"), "an answer before the outage")

        private_redis.stop()
        for port, ts in ((a, "601.000100"), (b, "602.000100")):
            assert await send.event(port, mention("during", ts=ts), event_id=f"Ev{ts}") == 200
            await cluster.wait_for(
                lambda f, ts=ts: any("temporarily unavailable" in t for t in texts(f, ts)),
                "a clear 'temporarily unavailable' reply",
            )
            status, health = await send.health(port)
            assert status == 503 and "Redis is unavailable" in health["state"]["detail"]

        private_redis.start()  # same port, empty: nothing was persisted
        deadline = time.monotonic() + WAIT
        while {(await send.health(port))[0] for port in (a, b)} != {200}:
            assert time.monotonic() < deadline, cluster.output()
            await asyncio.sleep(0.05)  # polling two processes' health, with a deadline
        for port, ts in ((a, "603.000100"), (b, "604.000100")):
            assert await send.event(port, mention("after", ts=ts), event_id=f"Ev{ts}") == 200
        for ts in ("603.000100", "604.000100"):
            await cluster.wait_for(answered(ts), "normal answers after the restart")
            assert answers(fake, ts)[0].text == "Answer to «after» after 0 earlier messages."
        assert len(answers(fake, "601.000100") + answers(fake, "602.000100")) == 0


async def test_threadline_slack_processes_2_serves_one_port_from_two_processes(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The CLI itself: ``threadline slack --processes 2`` (SO_REUSEPORT), demo agent."""
    if not sys.platform.startswith("linux"):
        pytest.skip("SO_REUSEPORT balancing is Linux-only")
    async with FakeSlackApi() as fake:
        add_users(fake)
        env = bot_env("cli", fake, redis_url, key_prefix, tmp_path)
        command = [sys.executable, "-m", "bots.cli", "slack", "--processes", "2", "--scripted"]
        parent = BotProcess("cli", command, env)
        await parent.start(listeners=2)
        try:
            async with aiohttp.ClientSession() as session:
                cluster = Cluster(fake, [parent], SlackSender(session))
                seen: set[int] = set()
                deadline = time.monotonic() + WAIT
                while len(seen) < 2:
                    assert time.monotonic() < deadline, f"only {seen}:\n{parent.output()}"
                    status, health = await cluster.send.health(parent.port)
                    assert status == 200
                    seen.add(health["process"])
                assert parent.pid not in seen
                await cluster.send.event(parent.port, mention("help", ts="700.0"), event_id="Ev7")
                await cluster.wait_for(lambda f: bool(f.thread("C1", "700.0")), "a demo answer")
        finally:
            parent.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            assert await parent.stop() == 0, parent.output()
        for pid in seen:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


async def test_socket_mode_processes_each_open_a_connection_and_answer_on_it(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """``threadline slack --processes 2`` in Socket Mode: two connections; an envelope on
    either is acked on that connection and answered once."""
    async with FakeSlackApi() as fake:
        add_users(fake)
        env = bot_env("sock", fake, redis_url, key_prefix, tmp_path) | {"SLACK_APP_TOKEN": "xapp-1"}
        command = [sys.executable, "-m", "bots.cli", "slack", "--processes", "2", "--scripted"]
        parent = BotProcess("sock", command, env)
        await parent.start(listeners=2)
        try:
            await fake.wait_for(lambda f: len(f._sockets) == 2, timeout=WAIT)
            opens = fake.calls_to("apps.connections.open")
            assert len(opens) == 2 and {c.token for c in opens} == {"xapp-1"}
            for n, socket in enumerate(fake._sockets):
                body = {
                    "team_id": "T1",
                    "api_app_id": "A1",
                    "type": "event_callback",
                    "event_id": f"EvS{n}",
                    "event_time": int(time.time()),
                    "event": mention("help", ts=f"80{n}.0"),
                }
                envelope = {
                    "envelope_id": f"env-{n}",
                    "type": "events_api",
                    "payload": body,
                    "accepts_response_payload": False,
                    "retry_attempt": 0,
                }
                await socket.send_json(envelope)
            await fake.wait_for(lambda f: len(f.calls_to("socket_ack")) == 2, timeout=WAIT)
            assert {c.args["envelope_id"] for c in fake.calls_to("socket_ack")} == {
                "env-0",
                "env-1",
            }
            for n in range(2):
                await fake.wait_for(lambda f, n=n: bool(f.thread("C1", f"80{n}.0")), timeout=WAIT)
        finally:
            parent.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            assert await parent.stop() == 0, parent.output()


# --- approval in the thread, across processes (issue 25) ----------------------------------------


def approval_of(fake: FakeSlackApi, thread_ts: str) -> tuple[Message, str] | None:
    """The approval message in a thread and its id (while it has buttons)."""
    for message in fake.thread("C1", thread_ts):
        for block in message.blocks:
            for element in block.get("elements") or []:
                if str(element.get("action_id", "")).startswith("threadline_approval:"):
                    return message, str(element["value"])
    return None


def refund_runs(data: Path) -> list[str]:
    runs = data / "runs.txt"
    return runs.read_text().splitlines() if runs.exists() else []


async def test_an_approval_asked_on_a_killed_process_is_resumed_once_by_another(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """Process A asks for approval and is killed (``kill -9``); the click lands on B, which
    decides, updates A's approval message in place and resumes the turn: the tool runs once,
    on B, and the answer follows in the thread."""
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        a, b = cluster.bots
        await cluster.send.event(a.port, mention("refund order 42", "500.000100"), event_id="Ev1")
        await cluster.wait_for(lambda f: approval_of(f, "500.000100") is not None, "the approval")
        await cluster.drained()
        found = approval_of(cluster.fake, "500.000100")
        assert found is not None
        message, approval_id = found
        assert refund_runs(tmp_path) == []
        await a.kill()

        status = await cluster.send.action(
            b.port, "threadline_approval:approve", approval_id, user="U1", message=message
        )
        assert status == 200
        await cluster.wait_for(
            lambda f: any("order 42 refunded" in t for t in texts(f, "500.000100")),
            "the resumed answer",
        )
        await cluster.drained()
        assert [line.split()[1] for line in refund_runs(tmp_path)] == ["42"]
        assert refund_runs(tmp_path)[0].split()[0] == str(b.pid)
        assert approval_of(cluster.fake, "500.000100") is None  # updated: no buttons left
        assert "Approved by Ana" in str(message.blocks)
        updates = [c for c in cluster.fake.calls_to("chat.update") if c.args["ts"] == message.ts]
        assert {c.token for c in updates} == {b.token}


async def test_clicks_on_both_processes_at_once_run_the_tool_once(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path) as cluster:
        a, b = cluster.bots
        await cluster.send.event(a.port, mention("refund order 42", "600.000100"), event_id="Ev1")
        await cluster.wait_for(lambda f: approval_of(f, "600.000100") is not None, "the approval")
        found = approval_of(cluster.fake, "600.000100")
        assert found is not None
        message, approval_id = found
        clicks = [
            cluster.send.action(
                port, "threadline_approval:approve", approval_id, user=user, message=message
            )
            for port in (a.port, b.port, a.port, b.port)
            for user in ("U1", "UADMIN")
        ]
        assert set(await asyncio.gather(*clicks)) == {200}
        await cluster.wait_for(
            lambda f: any("order 42 refunded" in t for t in texts(f, "600.000100")),
            "the resumed answer",
        )
        await cluster.drained()
        assert len(refund_runs(tmp_path)) == 1
        assert [t for t in texts(cluster.fake, "600.000100") if "refunded" in t] == [
            "Refund: order 42 refunded"
        ]
