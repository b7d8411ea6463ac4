"""Teams ingress: the cost of one message activity, from arrival to the reply sent.

Two paths, same run, same machine, same signed activities (real JWT validation against a
local OpenID/JWKS fake; outbound tokens from a local managed-identity endpoint):

* **stock**: botbuilder 4.17.1 ``CloudAdapter`` + ``ConfigurationBotFrameworkAuthentication``
  + a bare ``ActivityHandler`` that replies ``send_activity("echo")``;
* **threadline**: ``bots.teams.ingress.receive`` (the same code ``/api/messages`` runs
  after parsing the body: the JWT verified, the bot's handler) with an echo agent, until
  its turn's reply was accepted (the stub answered it). The
  message goes through the durable turn queue: recorded (with its dedupe key) before the
  ``201`` and, on SQLite and Redis, handed in the same write to this process's worker, which
  replies, then records the answer's message id and ``answered`` and completes the turn;
  the next activity is sent once the turn is complete (``turn done`` figures: the host's
  ``idle``, which polls the store for turns pending anywhere, is awaited only once the reply
  was accepted, so that its polling is not timed in the reply). Measured on each state
  backend: memory (the ``--ephemeral`` queue), SQLite (the single-process default: a file
  write per step) and Redis (a local ``redis-server``: ~6 round trips per turn). The *ack*
  figures are the time until Teams gets its ``201`` (the turn recorded).
  The Bot Framework reuses a token for many activities (as both paths see here); a row with a
  new token on every activity shows the cost without the validated-token memory.

Both reply to a local stub Bot Connector (``adapters.teams.testing``) running on its own
thread and event loop. Part 1 times one activity at a time in process (the number Teams
cares about is per-activity cost); part 2 measures throughput over loopback HTTP with 50
concurrent requests, bounded to a fixed number of activities. A third row runs the full
``agent_core.Agent`` (ScriptedLlmService) behind the host, for scale.

Run: ``.venv/bin/python benchmarks/teams_ingress.py [--activities 400] [--warmup 40]
[--http 1000]`` (well under a minute; the Redis rows need ``redis-server`` on the PATH).
Goals, printed beside their figures with "met" or "NOT met": reply p50 <= 1.0 ms on memory,
<= 1.5 ms on SQLite and Redis (durable). The last line is one JSON object with the figures
and each goal's value, goal and verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from _stats import Goals, result_line
from aiohttp import web
from botbuilder.core import ActivityHandler, TurnContext
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
)
from botbuilder.schema import Activity

from adapters.teams.testing import FakeBotConnector
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
from agent_core.components import RichTextComponent, UiComponent
from agent_core.feedback import Feedback
from agent_core.state.testing import RedisServer, redis_available
from agent_core.state.turn_writes import TurnWrites
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import RequestContext
from bots.teams.app import build_web_app
from bots.teams.bot import TeamsBot
from bots.teams.ingress import receive
from bots.teams.settings import TeamsSettings

SEQUENTIAL = 400
WARMUP = 40
CONCURRENCY = 50
HTTP_TOTAL = 1000
TENANT = "bench-tenant"
_ids = itertools.count(1)


class EchoAgent:
    """The smallest agent: one final text component (the channel cost alone)."""

    async def send_message(
        self,
        request_context: RequestContext,
        message: str,
        *,
        conversation_id: str | None,
        writes: TurnWrites | None = None,
    ) -> AsyncIterator[UiComponent]:
        yield UiComponent(rich_component=RichTextComponent(content="echo"))

    async def record_feedback(self, request_context: RequestContext, feedback: Feedback) -> None:
        return None

    def served_agents(self) -> list[Any]:
        return []  # no tool asks for approval here: the bot's approval sweep has no book


class Echo(ActivityHandler):
    async def on_message_activity(self, turn_context: TurnContext) -> None:
        await turn_context.send_activity("echo")


def start_stub() -> FakeBotConnector:
    """The fake connector + OpenID + token endpoints, on a thread of their own."""
    stub = FakeBotConnector(app_id="00000000-0000-0000-0000-0000000000b0")
    ready = threading.Event()

    def serve() -> None:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(stub.start())
        ready.set()
        loop.run_forever()

    threading.Thread(target=serve, daemon=True, name="stub").start()
    ready.wait()
    os.environ["IDENTITY_ENDPOINT"] = stub.managed_identity_endpoint
    os.environ["IDENTITY_HEADER"] = stub.identity_header
    return stub


def settings_for(stub: FakeBotConnector) -> TeamsSettings:
    return TeamsSettings(
        app_type="UserAssignedMSI",
        app_id=stub.app_id,
        app_tenant_id=TENANT,
        openid_metadata_url=stub.openid_metadata_url,
        token_issuer=stub.issuer,
        oauth_scope="https://api.botframework.com",
        default_groups=["user"],
    )


def activity(stub: FakeBotConnector) -> dict[str, Any]:
    number = next(_ids)
    return {
        "type": "message",
        "id": f"bench-{number}",
        "text": "hello",
        "serviceUrl": stub.url,
        "channelId": "msteams",
        "from": {"id": f"29:user-{number % 97}", "aadObjectId": f"user-{number % 97}"},
        "recipient": {"id": "28:bot", "name": "Threadline"},
        "conversation": {
            "id": f"a:personal-{number % 97}",
            "conversationType": "personal",
            "tenantId": TENANT,
        },
    }


Run = Callable[[dict[str, Any], str], Awaitable[float | None]]
"""One activity: returns when its turn is done; the ack time when it has one."""


class Replies:
    """When the stub accepted each reply (its ``on_call``, on the stub's thread); ``accepted``
    is set on the benchmark's loop then."""

    def __init__(self, stub: FakeBotConnector) -> None:
        self.last: float | None = None
        self.accepted = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        stub.on_call = self._seen

    def _seen(self, call: Any) -> None:
        if call.operation in ("reply_to_activity", "send_to_conversation"):
            self.last = time.perf_counter()
            self._loop.call_soon_threadsafe(self.accepted.set)

    def expect(self) -> None:
        """Before the next activity."""
        self.last = None
        self.accepted.clear()


async def timed(
    count: int,
    run: Run,
    stub: FakeBotConnector,
    headers: Callable[[int], str],
    acks: list[float] | None = None,
    done: list[float] | None = None,
    replies: Replies | None = None,
) -> list[float]:
    """Seconds from each activity to its reply accepted by the stub; ``acks`` and ``done``
    (the turn complete) collected alongside."""
    replies = replies or Replies(stub)
    samples: list[float] = []
    for index in range(WARMUP + count):
        body = activity(stub)
        header = headers(index)
        replies.expect()
        started = time.perf_counter()
        acked = await run(body, header)
        finished = time.perf_counter()
        if index >= WARMUP:
            assert replies.last is not None, "no reply was accepted"
            samples.append(replies.last - started)
            if done is not None:
                done.append(finished - started)
            if acks is not None and acked is not None:
                acks.append(acked - started)
        if index % 100 == 0:
            stub.calls.clear()
    return samples


async def stock_sequential(stub: FakeBotConnector, header: str) -> list[float]:
    configuration = settings_for(stub).botbuilder_configuration()
    adapter = CloudAdapter(ConfigurationBotFrameworkAuthentication(configuration))
    bot = Echo()

    async def run(body: dict[str, Any], header: str) -> None:
        await adapter.process_activity(header, Activity().deserialize(body), bot.on_turn)

    return await timed(SEQUENTIAL, run, stub, lambda _: header)


def make_host(stub: FakeBotConnector, state: State | None, agent: Any) -> TeamsBot:
    return TeamsBot(agent, settings_for(stub), state=state)


async def ours_sequential(
    stub: FakeBotConnector,
    headers: Callable[[int], str],
    agent: Any,
    state: State | None = None,
    acks: list[float] | None = None,
    done: list[float] | None = None,
) -> list[float]:
    host = make_host(stub, state, agent)
    await host.open()  # signing keys prefetched, the turn worker started
    replies = Replies(stub)

    async def run(body: dict[str, Any], header: str) -> float:
        status, _ = await receive(host, body, header)
        acked = time.perf_counter()
        assert status == 201
        # Then until the turn is done. ``idle`` polls the store for turns pending anywhere,
        # which no production path does: only once the reply was accepted, so that its
        # polling (a Redis round trip each) is not timed as part of the reply.
        await asyncio.wait_for(replies.accepted.wait(), 30)
        await host.turns.idle()
        return acked

    try:
        return await timed(SEQUENTIAL, run, stub, headers, acks, done, replies)
    finally:
        await host.close()


def real_agent() -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(then="echo"),
        tool_registry=ToolRegistry(),
        user_resolver=_Anyone(),
        agent_memory=InMemoryAgentMemory(),
    )


class _Anyone:
    async def resolve_user(self, request_context: RequestContext) -> Any:
        from agent_core.users import User

        return User(id=str(request_context.metadata.get("user_id")), group_memberships=["user"])


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/api/messages"


async def load(
    url: str, stub: FakeBotConnector, header: str, replies: Callable[[], Awaitable[None]]
) -> dict[str, float]:
    """POST ``HTTP_TOTAL`` activities with ``CONCURRENCY`` in flight; acks/s and replies/s."""
    bodies = [activity(stub) for _ in range(HTTP_TOTAL)]
    queue = iter(bodies)
    statuses: list[int] = []
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            for body in queue:
                async with session.post(
                    url, json=body, headers={"Authorization": header}
                ) as response:
                    statuses.append(response.status)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        acked = time.perf_counter() - started
        await replies()
        done = time.perf_counter() - started
    assert all(s in (200, 201) for s in statuses), set(statuses)
    return {"acks_per_s": HTTP_TOTAL / acked, "replies_per_s": HTTP_TOTAL / done}


async def stock_http(stub: FakeBotConnector, header: str) -> dict[str, float]:
    adapter = CloudAdapter(
        ConfigurationBotFrameworkAuthentication(settings_for(stub).botbuilder_configuration())
    )
    bot = Echo()
    app = web.Application()

    async def messages(request: web.Request) -> web.StreamResponse:
        return await adapter.process(request, bot)  # type: ignore[no-any-return]

    app.router.add_post("/api/messages", messages)
    runner, url = await serve(app)

    async def nothing() -> None:
        return None  # stock replies inside the request

    try:
        return await load(url, stub, header, nothing)
    finally:
        await runner.cleanup()


async def ours_http(
    stub: FakeBotConnector, header: str, state: State | None = None
) -> dict[str, float]:
    host = make_host(stub, state, EchoAgent())
    await host.open()
    runner, url = await serve(build_web_app(host))
    try:
        return await load(url, stub, header, host.turns.idle)
    finally:
        await runner.cleanup()
        await host.close()


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": statistics.median(ordered) * 1e3,
        "p90_ms": ordered[int(len(ordered) * 0.9)] * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
    }


def redis_server(stack: ExitStack) -> str | None:
    """A private ``redis-server`` for the Redis rows (None when it is not installed)."""
    if not redis_available():
        return None
    server = RedisServer(Path(stack.enter_context(tempfile.TemporaryDirectory())))
    server.start()
    stack.callback(server.stop)
    return server.url


async def on_backend(
    stub: FakeBotConnector, header: str, settings: StateSettings
) -> dict[str, float]:
    """Sequential (ack and reply) and loopback-HTTP figures with ``settings``' state."""
    state = build_state(settings)
    try:
        acks: list[float] = []
        done: list[float] = []
        replies = summary(
            await ours_sequential(stub, lambda _: header, EchoAgent(), state, acks, done)
        )
        load_figures = await ours_http(stub, header, state)
    finally:
        await state.aclose()
    return {
        "reply_p50_ms": replies["p50_ms"],
        "reply_p90_ms": replies["p90_ms"],
        "ack_p50_ms": summary(acks)["p50_ms"],
        "done_p50_ms": summary(done)["p50_ms"],
        **load_figures,
    }


async def main() -> dict[str, Any]:
    logging.disable(logging.WARNING)
    stub = start_stub()
    header = stub.sign(service_url=stub.url, expires_in=3600)
    fresh = [
        stub.sign(service_url=stub.url, claims={"jti": str(i)}) for i in range(WARMUP + SEQUENTIAL)
    ]
    stock = summary(await stock_sequential(stub, header))
    acks: list[float] = []
    done: list[float] = []
    ours = summary(await ours_sequential(stub, lambda _: header, EchoAgent(), acks=acks, done=done))
    ours_fresh = summary(await ours_sequential(stub, fresh.__getitem__, EchoAgent()))
    full = summary(await ours_sequential(stub, lambda _: header, real_agent()))
    stock_load = await stock_http(stub, header)
    ours_load = await ours_http(stub, header)
    with ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory())
        sqlite = await on_backend(stub, header, StateSettings(data_dir=Path(data_dir)))
        url = redis_server(stack)
        redis = await on_backend(stub, header, StateSettings(redis_url=url)) if url else {}
    return {
        "sequential_activities": SEQUENTIAL,
        "stock_p50_ms": round(stock["p50_ms"], 3),
        "stock_p90_ms": round(stock["p90_ms"], 3),
        "threadline_p50_ms": round(ours["p50_ms"], 3),
        "threadline_p90_ms": round(ours["p90_ms"], 3),
        "threadline_ack_p50_ms": round(summary(acks)["p50_ms"], 3),
        "threadline_done_p50_ms": round(summary(done)["p50_ms"], 3),
        "threadline_fresh_token_p50_ms": round(ours_fresh["p50_ms"], 3),
        "threadline_full_agent_p50_ms": round(full["p50_ms"], 3),
        "speedup_p50": round(stock["p50_ms"] / ours["p50_ms"], 2),
        "http_concurrency": CONCURRENCY,
        "http_activities": HTTP_TOTAL,
        "stock_http_acks_per_s": round(stock_load["acks_per_s"], 1),
        "stock_http_replies_per_s": round(stock_load["replies_per_s"], 1),
        "threadline_http_acks_per_s": round(ours_load["acks_per_s"], 1),
        "threadline_http_replies_per_s": round(ours_load["replies_per_s"], 1),
        **{f"sqlite_{k}": round(v, 3) for k, v in sqlite.items()},
        **{f"redis_{k}": round(v, 3) for k, v in redis.items()},
    }


def report(figures: dict[str, Any], goals: Goals) -> None:
    f = figures
    print("Teams ingress, one activity (JWT validated) to the reply accepted by a local stub")
    print(
        f"  stock botbuilder CloudAdapter + bare handler: p50 {f['stock_p50_ms']:.3f} ms"
        f"  p90 {f['stock_p90_ms']:.3f} ms"
    )
    print(
        f"  threadline host + echo agent, memory queue:   p50 {f['threadline_p50_ms']:.3f} ms"
        f"  p90 {f['threadline_p90_ms']:.3f} ms  (ack p50 {f['threadline_ack_p50_ms']:.3f} ms;"
        f" turn done p50 {f['threadline_done_p50_ms']:.3f} ms; {f['speedup_p50']}x faster) "
        f"{goals.check('memory_reply_p50_ms', f['threadline_p50_ms'], '<=', 1.0, ' ms')}"
    )
    for name in ("sqlite", "redis"):
        reply = f.get(f"{name}_reply_p50_ms")
        verdict = goals.check(f"{name}_reply_p50_ms", reply, "<=", 1.5, " ms")
        if reply is None:
            print(f"  threadline, {name} queue: skipped (redis-server not installed) {verdict}")
            continue
        print(
            f"  threadline host + echo agent, {name + ' queue:':14s} p50 "
            f"{reply:.3f} ms  p90 {f[f'{name}_reply_p90_ms']:.3f} ms  "
            f"(ack p50 {f[f'{name}_ack_p50_ms']:.3f} ms; turn done p50 "
            f"{f[f'{name}_done_p50_ms']:.3f} ms) {verdict}"
        )
    print(
        f"  threadline, a new token on every activity:   p50 "
        f"{f['threadline_fresh_token_p50_ms']:.3f} ms"
    )
    print(
        f"  threadline host + full Agent (scripted LLM):  p50 "
        f"{f['threadline_full_agent_p50_ms']:.3f} ms"
    )
    print(f"Loopback HTTP, {CONCURRENCY} concurrent, {HTTP_TOTAL} activities")
    print(
        f"  stock:              {f['stock_http_acks_per_s']:.0f} acks/s, "
        f"{f['stock_http_replies_per_s']:.0f} replies/s"
    )
    print(
        f"  threadline, memory: {f['threadline_http_acks_per_s']:.0f} acks/s, "
        f"{f['threadline_http_replies_per_s']:.0f} replies/s"
    )
    for name in ("sqlite", "redis"):
        if f"{name}_acks_per_s" in f:
            print(
                f"  threadline, {name + ':':7s} {f[f'{name}_acks_per_s']:.0f} acks/s, "
                f"{f[f'{name}_replies_per_s']:.0f} replies/s"
            )


def parse_sizes() -> None:
    """Sizes from the command line (defaults: those of the published figures)."""
    global SEQUENTIAL, WARMUP, HTTP_TOTAL
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--activities", type=int, default=SEQUENTIAL, help="activities timed one at a time, per row"
    )
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument(
        "--http", type=int, default=HTTP_TOTAL, help="activities per loopback HTTP run"
    )
    args = parser.parse_args()
    SEQUENTIAL, WARMUP, HTTP_TOTAL = args.activities, args.warmup, args.http


if __name__ == "__main__":
    parse_sizes()
    started = time.perf_counter()
    figures = asyncio.run(main())
    goals = Goals()
    report(figures, goals)
    print(f"(ran in {time.perf_counter() - started:.1f} s)")
    print(result_line("teams_ingress", goals, **figures))
