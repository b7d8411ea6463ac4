"""Slack ingress: what the bot adds between Slack's request and the ack, and streaming cost.

1. In-process: a signed ``app_mention`` dispatched through the whole bot (signature check,
   dedupe, listener, turn started) until bolt returns the ack, vs a bare bolt ``AsyncApp``
   whose listener only acks. Same process, alternating rounds; p50 ratio (goal <= 1.3).
   Turn tasks are cancelled outside the timed section, so only the path to the ack counts.
2. Loopback HTTP: the bot's aiohttp server and a bare bolt server each run in a subprocess;
   50 concurrent clients send signed mentions (bounded by count and time). For the bot, 500
   turns (scripted LLM, 1 s latency) are started first and every measured request starts one
   more. Requests/s ratio (goal >= 0.8) and the bot's p99 ack latency (goal < 100 ms).
3. Web API calls for one streamed 3,000-character answer, not counting status and identity
   lookups (goal <= 4); generated at once, and paced over 3 s for information.

    .venv/bin/python benchmarks/slack_ingress.py [--dispatches 2000] [--requests 3000]

The fake Slack Web API (tests/fakes/slack_api.py) answers every Web API call on 127.0.0.1.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import aiohttp  # noqa: E402
from _stats import result_line, summary_us  # noqa: E402
from slack_bolt.app.async_app import AsyncApp  # noqa: E402
from slack_bolt.request.async_request import AsyncBoltRequest  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402
from slack_sdk.web.async_client import AsyncWebClient  # noqa: E402

from adapters.slack.identity import SlackUserResolver  # noqa: E402
from agent_core import (  # noqa: E402
    Agent,
    InMemoryAgentMemory,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
)
from bots.slack_bot import SlackBot  # noqa: E402
from bots.slack_server import serve_http  # noqa: E402
from bots.slack_settings import SlackSettings  # noqa: E402
from tests.fakes.slack_api import FakeSlackApi  # noqa: E402

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
IDENTITY = {"auth.test", "users.info", "usergroups.list", "assistant.threads.setStatus"}


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


def build_bot(api_url: str, *, latency: float, answer: ScriptedResponse | str) -> SlackBot:
    client = AsyncWebClient(token=TOKEN, base_url=api_url)
    agent = Agent(
        llm_service=ScriptedLlmService(then=answer, latency=latency),
        tool_registry=ToolRegistry(),
        user_resolver=SlackUserResolver(client),
        agent_memory=InMemoryAgentMemory(),
    )
    settings = SlackSettings(
        bot_token=TOKEN, signing_secret=SECRET, api_url=api_url, stop_button_after=600
    )
    return SlackBot(agent, settings)


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
    body = mention_body(n)
    started = time.perf_counter_ns()
    response = await app.async_dispatch(
        AsyncBoltRequest(body=body.decode(), headers=signed_headers(body))
    )
    took = time.perf_counter_ns() - started
    if response.status != 200:
        raise RuntimeError(f"dispatch failed: {response.status} {response.body}")
    return took


async def _cancel_turns() -> None:
    turns = [t for t in asyncio.all_tasks() if t.get_name().startswith("slack-turn-")]
    for task in turns:
        task.cancel()
    await asyncio.gather(*turns, return_exceptions=True)


async def in_process(dispatches: int) -> dict[str, Any]:
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "profile": {"display_name": "Ana"}}
        bot = build_bot(fake.base_url, latency=0, answer="ok")
        bare = build_bare(fake.base_url)
        ours_ns: list[int] = []
        bare_ns: list[int] = []
        for n in range(-50, dispatches):  # the first 50 of each warm up (auth.test, caches)
            a = await _dispatch(bot.app, 2 * n + 10_000)
            await _cancel_turns()
            b = await _dispatch(bare, 2 * n + 10_001)
            await asyncio.sleep(0)  # let bolt's own listener task finish
            if n >= 0:
                ours_ns.append(a)
                bare_ns.append(b)
        ours, baseline = summary_us(ours_ns), summary_us(bare_ns)
        return {
            "bot": ours,
            "bare_bolt": baseline,
            "p50_ratio": round(ours["p50_us"] / baseline["p50_us"], 3),
        }


# --- 2. loopback HTTP ---------------------------------------------------------------------------


def _run_fake(ports: Any, stop: Any) -> None:
    async def main() -> None:
        async with FakeSlackApi() as fake:
            fake.users["U1"] = {"id": "U1", "profile": {"display_name": "Ana"}}
            ports.put(fake.port)
            await asyncio.get_running_loop().run_in_executor(None, stop.wait)

    asyncio.run(main())


def _run_server(kind: str, api_url: str, ports: Any, stop: Any) -> None:
    async def main() -> None:
        if kind == "bot":
            bot = build_bot(api_url, latency=1.0, answer="Short answer.")
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


async def _turns_in_flight(port: int) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        return int((await response.json())["running_turns"])


def _start(target: Any, *args: Any) -> tuple[Any, int]:
    ctx = mp.get_context("spawn")
    ports = ctx.Queue()
    stop = ctx.Event()
    process = ctx.Process(target=target, args=(*args, ports, stop), daemon=True)
    process.start()
    return (process, stop), int(ports.get(timeout=30))


async def _measure(kind: str, api_url: str, requests: int, limit_s: float) -> dict[str, Any]:
    """Both load shapes against one server: ignored channel messages, then mentions."""
    (process, stop), port = _start(_run_server, kind, api_url)
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


async def loopback(requests: int, limit_s: float) -> dict[str, Any]:
    (fake_process, fake_stop), fake_port = _start(_run_fake)
    api_url = f"http://127.0.0.1:{fake_port}/api/"
    try:
        bare = await _measure("bare", api_url, requests, limit_s)
        bot = await _measure("bot", api_url, requests, limit_s)
    finally:
        fake_stop.set()
        fake_process.join(timeout=10)
    return {
        "bare_bolt": bare,
        "bot": bot,
        "messages_rps_ratio": round(bot["messages"]["rps"] / bare["messages"]["rps"], 3),
        "mentions_rps_ratio": round(bot["mentions"]["rps"] / bare["mentions"]["rps"], 3),
    }


# --- 3. Web API calls per streamed answer --------------------------------------------------------


async def calls_per_answer(pace_s: float) -> dict[str, Any]:
    words = ("lorem ipsum dolor sit amet consectetur " * 80)[:3000]
    chunks = [words[i : i + 15] for i in range(0, 3000, 15)]
    answer = ScriptedResponse(text=words, chunks=chunks, chunk_delay=pace_s / len(chunks))
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "profile": {"display_name": "Ana"}}
        bot = build_bot(fake.base_url, latency=0, answer=answer)
        body = mention_body(1)
        await bot.app.async_dispatch(
            AsyncBoltRequest(body=body.decode(), headers=signed_headers(body))
        )
        await bot.turns.wait_idle()
        methods = [c.method for c in fake.calls if c.method not in IDENTITY]
        status = [c.method for c in fake.calls if c.method == "assistant.threads.setStatus"]
        [message] = fake.visible("C1")
        assert message.text == words, "the streamed answer arrived incomplete"
        return {"web_api_calls": len(methods), "status_calls": len(status), "methods": methods}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dispatches", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=8.0, help="cap of each HTTP load run")
    args = parser.parse_args()

    dispatch = asyncio.run(in_process(args.dispatches))
    print(
        f"in-process ack p50: bot {dispatch['bot']['p50_us']} us, bare bolt "
        f"{dispatch['bare_bolt']['p50_us']} us -> ratio {dispatch['p50_ratio']} (goal <= 1.3)"
    )
    http = asyncio.run(loopback(args.requests, args.seconds))
    bot, bare = http["bot"], http["bare_bolt"]
    print(
        f"loopback HTTP, 50 clients, {bot['turns_in_flight_before']} turns in flight: "
        f"channel messages bot {bot['messages']['rps']} req/s (p99 ack "
        f"{bot['messages']['p99_ms']} ms) vs bare bolt {bare['messages']['rps']} req/s -> ratio "
        f"{http['messages_rps_ratio']} (goal >= 0.8, p99 < 100 ms)"
    )
    print(
        f"  mentions (each starts a turn): bot {bot['mentions']['rps']} req/s (p99 ack "
        f"{bot['mentions']['p99_ms']} ms, {bot['turns_in_flight_after']} turns in flight after) "
        f"vs bare bolt {bare['mentions']['rps']} req/s -> ratio {http['mentions_rps_ratio']}"
    )
    instant = asyncio.run(calls_per_answer(0.0))
    paced = asyncio.run(calls_per_answer(3.0))
    print(
        f"3,000-char streamed answer: {instant['web_api_calls']} Web API calls + "
        f"{instant['status_calls']} status (goal <= 4) {instant['methods']}; paced over 3 s: "
        f"{paced['web_api_calls']} calls"
    )
    print(
        result_line(
            "slack_ingress",
            in_process=dispatch,
            loopback_http=http,
            streamed_answer_calls=instant["web_api_calls"],
            streamed_answer_status_calls=instant["status_calls"],
            streamed_answer_calls_paced_3s=paced["web_api_calls"],
        )
    )


if __name__ == "__main__":
    main()
