"""Slack ingress: what the bot adds between Slack's request and the ack, and streaming cost.

1. In-process: a signed ``app_mention`` through the whole bot (``bots.slack.ingress.receive``:
   the signature check, the body parsed and read once, bolt's dispatch, the listener, the
   thread flag and the turn recorded in one step) until bolt returns the ack, vs a bare
   bolt ``AsyncApp`` (which checks the signature itself) whose listener only acks. Same
   process, alternating dispatches; p50 ratio with the bot's state in memory (goal <= 1.0),
   SQLite and Redis (goal <= 1.5). No worker runs: only the path to the ack counts. Then
   the same number of mentions by 50 callers at once, each side on its own: the process's
   CPU per mention and its ratio (no goal; steadier than part 2's rates on shared cores).
2. Loopback HTTP: the bot's aiohttp server and a bare bolt server each run in a subprocess;
   50 concurrent clients send signed events (bounded by count and time). For the bot, 500
   turns (scripted LLM, 1 s latency) are accepted first; its worker answers them (64 at a
   time) while the load runs, and every measured mention records one more. Requests/s
   ratio (goal >= 0.8: channel messages on every backend, mentions on Redis) and the bot's
   p99 ack latency (goal <= 100 ms), with the bot's state
   in memory (``--ephemeral``), in SQLite (the default) and in Redis (a private
   ``redis-server``). Before its ack a mention costs two state calls (thread flag, enqueue);
   a thread reply in a thread the bot is not in costs one read on Redis (another process
   may have joined it) and none on memory / SQLite after the first (one writer).
3. Web API calls for one streamed 3,000-character answer, not counting status and identity
   lookups (goal <= 4); generated at once, and paced over 3 s for information.

    .venv/bin/python benchmarks/slack_ingress.py [--dispatches 2000] [--requests 3000]
                                                 [--seconds 8] [--paced-seconds 3]

The fake Slack Web API (``adapters.slack.testing``) answers every Web API call on 127.0.0.1.
Each goal is printed beside its figure with "met" or "NOT met"; the last line printed is one
JSON object, its ``verdicts`` each goal's value, goal and verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import aiohttp  # noqa: E402
from _stats import Goals, result_line, summary_us  # noqa: E402
from slack_bolt.app.async_app import AsyncApp  # noqa: E402
from slack_bolt.request.async_request import AsyncBoltRequest  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402
from slack_sdk.web.async_client import AsyncWebClient  # noqa: E402

from adapters.slack.identity import SlackUserResolver  # noqa: E402
from adapters.slack.testing import FakeSlackApi  # noqa: E402
from agent_core import (  # noqa: E402
    Agent,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
)
from agent_core.state_factory import StateSettings, build_state  # noqa: E402
from bots.slack.app import serve_http  # noqa: E402
from bots.slack.bot import SlackBot  # noqa: E402
from bots.slack.ingress import receive  # noqa: E402
from bots.slack.settings import SlackSettings  # noqa: E402

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
IDENTITY = {
    "auth.test",
    "users.info",
    "usergroups.list",
    "conversations.info",  # is the channel shared with another organisation? (cached)
    "assistant.threads.setStatus",
}


def event_body(n: int, *, mention: bool = True) -> bytes:
    """A signed-to-be ``app_mention`` (starts a turn) or a channel message in a thread the
    bot is not part of (what ``message.channels`` delivers all day: acked and ignored)."""
    ts = f"{1_700_000_000 + n}.000100"
    event: dict[str, Any] = {
        "type": "app_mention" if mention else "message",
        "user": "U1",
        "text": "<@UBOT> how many orders?" if mention else "lunch anyone?",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }
    if not mention:
        event |= {"channel_type": "channel", "thread_ts": "1600000000.000100"}
    return json.dumps(
        {
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"Ev{n}",
            "event_time": 1_700_000_000,
            "event": event,
        }
    ).encode()


def mention_body(n: int) -> bytes:
    return event_body(n)


def signed_headers(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }


def state_settings(backend: str) -> StateSettings:
    """``memory``, ``sqlite`` (a temporary directory) or a Redis URL (a fresh key prefix)."""
    if backend == "memory":
        return StateSettings(ephemeral=True)
    if backend == "sqlite":
        return StateSettings(data_dir=tempfile.mkdtemp(prefix="threadline-bench-"))
    return StateSettings(redis_url=backend, key_prefix=f"bench:{uuid.uuid4().hex[:8]}:")


def build_bot(
    api_url: str,
    *,
    latency: float,
    answer: ScriptedResponse | str,
    backend: str = "memory",
) -> SlackBot:
    """The bot with its state on ``backend`` (see ``state_settings``)."""
    client = AsyncWebClient(token=TOKEN, base_url=api_url)
    state = build_state(state_settings(backend))
    agent = Agent(
        llm_service=ScriptedLlmService(then=answer, latency=latency),
        tool_registry=ToolRegistry(),
        user_resolver=SlackUserResolver(client, cache=state.cache, local_ttl=30),
        agent_memory=state.memory,
        conversation_store=state.conversations,
    )
    settings = SlackSettings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        api_url=api_url,
        stop_button_after=600,
        turns_per_person=64,  # every benchmark mention is U1's: the worker runs 64 at once
    )
    return SlackBot(agent, settings, state=state)


def build_bare(api_url: str) -> AsyncApp:
    app = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token=TOKEN, base_url=api_url))

    @app.event("app_mention")
    async def ack_only() -> None:
        return None

    @app.event("message")
    async def ack_message() -> None:
        return None

    return app


# --- 1. in-process dispatch ------------------------------------------------------------------


async def _dispatch(app: AsyncApp, n: int) -> int:
    """Bare bolt: the request as its own HTTP adapter hands it over (it verifies it)."""
    body = mention_body(n)
    started = time.perf_counter_ns()
    response = await app.async_dispatch(
        AsyncBoltRequest(body=body.decode(), headers=signed_headers(body))
    )
    took = time.perf_counter_ns() - started
    if response.status != 200:
        raise RuntimeError(f"dispatch failed: {response.status} {response.body}")
    return took


async def _receive(bot: SlackBot, n: int) -> int:
    """The bot: the request as ``/slack/events`` hands it over (``receive`` verifies it)."""
    body = mention_body(n)
    started = time.perf_counter_ns()
    response = await receive(bot, body, signed_headers(body))
    took = time.perf_counter_ns() - started
    if response is None or response.status != 200:
        raise RuntimeError(f"dispatch failed: {response and response.status}")
    return took


async def in_process(dispatches: int, backend: str = "memory") -> dict[str, Any]:
    """Mentions dispatched in this process, ours (state on ``backend``) alternating with a
    bare bolt app's; p50 of each and their ratio."""
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "team_id": "T1", "profile": {"display_name": "Ana"}}
        bot = build_bot(fake.base_url, latency=0, answer="ok", backend=backend)
        bare = build_bare(fake.base_url)
        ours_ns: list[int] = []
        bare_ns: list[int] = []
        for n in range(-50, dispatches):  # the first 50 of each warm up (auth.test, caches)
            a = await _receive(bot, 2 * n + 10_000)
            b = await _dispatch(bare, 2 * n + 10_001)
            await asyncio.sleep(0)  # let bolt's own listener task finish
            if n >= 0:
                ours_ns.append(a)
                bare_ns.append(b)
        bot_at_once = await _at_once(dispatches, lambda n: _receive(bot, 100_000 + 2 * n))
        bare_at_once = await _at_once(dispatches, lambda n: _dispatch(bare, 100_001 + 2 * n))
        await bot.state.aclose()
        ours, baseline = summary_us(ours_ns), summary_us(bare_ns)
        cpu = bot_at_once["cpu_us_per_mention"] / bare_at_once["cpu_us_per_mention"]
        return {
            "bot": ours,
            "bare_bolt": baseline,
            "p50_ratio": round(ours["p50_us"] / baseline["p50_us"], 3),
            "at_once": {"bot": bot_at_once, "bare_bolt": bare_at_once, "cpu_ratio": round(cpu, 3)},
        }


async def _at_once(
    dispatches: int, one: Callable[[int], Awaitable[int]], clients: int = 50
) -> dict[str, float]:
    """``dispatches`` mentions by ``clients`` at once: per second, and this process's CPU
    per mention (steadier than a rate on shared cores: another job's time is not counted)."""
    numbers = iter(range(dispatches))

    async def client() -> None:
        for n in numbers:
            await one(n)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "per_s": round(dispatches / wall, 1),
        "cpu_us_per_mention": round(cpu / dispatches * 1e6, 1),
    }


# --- 2. loopback HTTP ---------------------------------------------------------------------------


def _run_fake(ports: Any, stop: Any) -> None:
    async def main() -> None:
        async with FakeSlackApi() as fake:
            fake.users["U1"] = {"id": "U1", "team_id": "T1", "profile": {"display_name": "Ana"}}
            ports.put(fake.port)
            await asyncio.get_running_loop().run_in_executor(None, stop.wait)

    asyncio.run(main())


def _run_server(kind: str, api_url: str, backend: str, ports: Any, stop: Any) -> None:
    async def main() -> None:
        if kind == "bot":
            bot = build_bot(api_url, latency=1.0, answer="Short answer.", backend=backend)
            await bot.open()
            runner = await serve_http(bot, host="127.0.0.1", port=0)
        else:
            from aiohttp import web

            runner = web.AppRunner(
                build_bare(api_url).web_app(path="/slack/events"), access_log=None
            )
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
        site = next(iter(runner.sites))
        ports.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
        await runner.cleanup()
        if kind == "bot":
            await bot.close(timeout=0)
            await bot.state.aclose()

    asyncio.run(main())


async def load(
    url: str, *, start: int, total: int, clients: int, limit_s: float, mention: bool = True
) -> dict[str, Any]:
    """``total`` signed events from ``clients`` concurrent clients, stopping at ``limit_s``."""
    latencies: list[int] = []
    failures = 0
    counter = iter(range(start, start + total))
    deadline = time.monotonic() + limit_s
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            nonlocal failures
            for n in counter:
                if time.monotonic() > deadline:
                    return
                body = event_body(n, mention=mention)
                began = time.perf_counter_ns()
                async with session.post(url, data=body, headers=signed_headers(body)) as response:
                    await response.read()
                    failures += response.status != 200
                latencies.append(time.perf_counter_ns() - began)

        began = time.monotonic()
        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.monotonic() - began
    stats = summary_us(latencies)
    return {
        "requests": len(latencies),
        "failures": failures,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(stats["p50_us"] / 1000, 2),
        "p99_ms": round(stats["p99_us"] / 1000, 2),
    }


async def _turns_in_flight(port: int) -> dict[str, int]:
    """Turns accepted and not finished, and how many of them the worker is running."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        health = await response.json()
        return {"accepted": int(health["queued_turns"]), "running": int(health["running_turns"])}


def _start(target: Any, *args: Any) -> tuple[Any, int]:
    ctx = mp.get_context("spawn")
    ports = ctx.Queue()
    stop = ctx.Event()
    process = ctx.Process(target=target, args=(*args, ports, stop), daemon=True)
    process.start()
    return (process, stop), int(ports.get(timeout=30))


async def _measure(
    kind: str, api_url: str, requests: int, limit_s: float, backend: str = "memory"
) -> dict[str, Any]:
    """Both load shapes against one server: ignored channel messages, then mentions."""
    (process, stop), port = _start(_run_server, kind, api_url, backend)
    url = f"http://127.0.0.1:{port}/slack/events"
    result: dict[str, Any] = {}
    try:
        await load(url, start=0, total=100, clients=10, limit_s=10)  # warm up
        if kind == "bot":
            await load(url, start=1000, total=500, clients=50, limit_s=10)  # 500 turns
            result["turns_in_flight_before"] = await _turns_in_flight(port)
        result["messages"] = await load(
            url, start=100_000, total=requests, clients=50, limit_s=limit_s, mention=False
        )
        result["mentions"] = await load(
            url, start=200_000, total=requests, clients=50, limit_s=limit_s
        )
        if kind == "bot":
            result["turns_in_flight_after"] = await _turns_in_flight(port)
    finally:
        stop.set()
        process.join(timeout=30)
    return result


async def loopback(requests: int, limit_s: float, redis_url: str) -> dict[str, Any]:
    (fake_process, fake_stop), fake_port = _start(_run_fake)
    api_url = f"http://127.0.0.1:{fake_port}/api/"
    try:
        bare = await _measure("bare", api_url, requests, limit_s)
        bots = {
            label: await _measure("bot", api_url, requests, limit_s, backend)
            for label, backend in (("memory", "memory"), ("sqlite", "sqlite"), ("redis", redis_url))
        }
    finally:
        fake_stop.set()
        fake_process.join(timeout=10)

    def ratio(ours: dict[str, Any], shape: str) -> float:
        return round(ours[shape]["rps"] / bare[shape]["rps"], 3)

    figures: dict[str, Any] = {"bare_bolt": bare}
    for label, ours in bots.items():
        prefix = "" if label == "memory" else f"{label}_"
        figures[f"bot{'' if label == 'memory' else '_' + label}"] = ours
        figures[f"{prefix}messages_rps_ratio"] = ratio(ours, "messages")
        figures[f"{prefix}mentions_rps_ratio"] = ratio(ours, "mentions")
    return figures


def _start_redis(directory: str) -> Any:
    from agent_core.state.testing import RedisServer

    server = RedisServer(Path(directory))
    server.start()
    return server


# --- 3. Web API calls per streamed answer --------------------------------------------------------


async def calls_per_answer(pace_s: float) -> dict[str, Any]:
    words = ("lorem ipsum dolor sit amet consectetur " * 80)[:3000]
    chunks = [words[i : i + 15] for i in range(0, 3000, 15)]
    answer = ScriptedResponse(text=words, chunks=chunks, chunk_delay=pace_s / len(chunks))
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "team_id": "T1", "profile": {"display_name": "Ana"}}
        bot = build_bot(fake.base_url, latency=0, answer=answer)
        await bot.open()
        body = mention_body(1)
        await receive(bot, body, signed_headers(body))
        await bot.idle()
        await bot.close()
        methods = [c.method for c in fake.calls if c.method not in IDENTITY]
        status = [c.method for c in fake.calls if c.method == "assistant.threads.setStatus"]
        [message] = fake.visible("C1")
        assert message.text == words, "the streamed answer arrived incomplete"
        return {"web_api_calls": len(methods), "status_calls": len(status), "methods": methods}


def _report(
    label: str, bot: dict[str, Any], bare: dict[str, Any], http: dict[str, Any], goals: Goals
) -> None:
    prefix = "" if label == "memory" else f"{label}_"
    before, after = bot["turns_in_flight_before"], bot["turns_in_flight_after"]
    messages = http[prefix + "messages_rps_ratio"]
    mentions = http[prefix + "mentions_rps_ratio"]
    print(
        f"loopback HTTP, state in {label}, 50 clients, {before['accepted']} turns accepted and "
        f"unanswered ({before['running']} running): channel messages bot "
        f"{bot['messages']['rps']} req/s vs bare bolt {bare['messages']['rps']} req/s -> ratio "
        f"{messages} {goals.check(f'{prefix}http_messages_rps_ratio', messages, '>=', 0.8)}; "
        f"p99 ack {bot['messages']['p99_ms']} ms "
        f"{goals.check(f'{prefix}http_messages_p99_ms', bot['messages']['p99_ms'], '<=', 100)}"
    )
    mentions_goal = (
        goals.check("redis_http_mentions_rps_ratio", mentions, ">=", 0.8)
        if label == "redis"
        else "(no goal)"
    )
    print(
        f"  mentions (each records a turn): bot {bot['mentions']['rps']} req/s (p99 ack "
        f"{bot['mentions']['p99_ms']} ms; {after['accepted']} unanswered after) vs bare bolt "
        f"{bare['mentions']['rps']} req/s -> ratio {mentions} {mentions_goal}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dispatches", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=8.0, help="cap of each HTTP load run")
    parser.add_argument(
        "--paced-seconds",
        type=float,
        default=3.0,
        help="how long the paced answer of part 3 takes to generate",
    )
    args = parser.parse_args()

    goals = Goals()
    with tempfile.TemporaryDirectory() as directory:
        redis = _start_redis(directory)
        try:
            dispatch = {
                label: asyncio.run(in_process(args.dispatches, backend))
                for label, backend in (
                    ("memory", "memory"),
                    ("sqlite", "sqlite"),
                    ("redis", redis.url),
                )
            }
            for label, goal in (("memory", 1.0), ("sqlite", 1.5), ("redis", 1.5)):
                figures = dispatch[label]
                verdict = goals.check(f"{label}_ack_p50_ratio", figures["p50_ratio"], "<=", goal)
                at_once = figures["at_once"]
                print(
                    f"in-process ack p50, state in {label}: bot {figures['bot']['p50_us']} us, "
                    f"bare bolt {figures['bare_bolt']['p50_us']} us -> ratio "
                    f"{figures['p50_ratio']} {verdict}; 50 at once, CPU per mention: bot "
                    f"{at_once['bot']['cpu_us_per_mention']} us, bare bolt "
                    f"{at_once['bare_bolt']['cpu_us_per_mention']} us -> ratio "
                    f"{at_once['cpu_ratio']} (no goal)"
                )
            http = asyncio.run(loopback(args.requests, args.seconds, redis.url))
        finally:
            redis.stop()
    _report("memory", http["bot"], http["bare_bolt"], http, goals)
    _report("sqlite", http["bot_sqlite"], http["bare_bolt"], http, goals)
    _report("redis", http["bot_redis"], http["bare_bolt"], http, goals)
    instant = asyncio.run(calls_per_answer(0.0))
    paced = asyncio.run(calls_per_answer(args.paced_seconds))
    print(
        f"3,000-char streamed answer: {instant['web_api_calls']} Web API calls + "
        f"{instant['status_calls']} status "
        f"{goals.check('streamed_answer_calls', instant['web_api_calls'], '<=', 4)} "
        f"{instant['methods']}; paced over "
        f"{args.paced_seconds:g} s: {paced['web_api_calls']} calls"
    )
    print(
        result_line(
            "slack_ingress",
            goals,
            in_process=dispatch,
            loopback_http=http,
            streamed_answer_calls=instant["web_api_calls"],
            streamed_answer_status_calls=instant["status_calls"],
            streamed_answer_calls_paced_3s=paced["web_api_calls"],
            streamed_answer_paced_seconds=args.paced_seconds,
        )
    )


if __name__ == "__main__":
    main()
