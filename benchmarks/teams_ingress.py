"""Teams ingress: the cost of one message activity, from arrival to the reply sent.

Two paths, same run, same machine, same signed activities (real JWT validation against a
local OpenID/JWKS fake; outbound tokens from a local managed-identity endpoint):

* **stock**: botbuilder 4.17.1 ``CloudAdapter`` + ``ConfigurationBotFrameworkAuthentication``
  + a bare ``ActivityHandler`` that replies ``send_activity("echo")``;
* **threadline**: ``TeamsHost.process_activity`` (the same code ``/api/messages`` runs after
  parsing the body) with an echo agent, until its background turn's reply was accepted.
  The Bot Framework reuses a token for many activities (as both paths see here); a row with a
  new token on every activity shows the cost without the validated-token memory.

Both reply to a local stub Bot Connector (``tests.fakes.bot_connector``) running on its own
thread and event loop. Part 1 times one activity at a time in process (the number Teams
cares about is per-activity cost); part 2 measures throughput over loopback HTTP with 50
concurrent requests, bounded to a fixed number of activities. A third row runs the full
``agent_core.Agent`` (ScriptedLlmService) behind the host, for scale.

Run: ``.venv/bin/python benchmarks/teams_ingress.py`` (well under a minute). The last line
is one JSON object with the figures.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from _stats import result_line
from aiohttp import web
from botbuilder.core import ActivityHandler, TurnContext
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
)
from botbuilder.schema import Activity

from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
from agent_core.components import RichTextComponent, UiComponent
from agent_core.feedback import Feedback
from agent_core.users import RequestContext
from bots.teams_host import TeamsHost
from bots.teams_settings import TeamsSettings
from tests.fakes.bot_connector import FakeBotConnector

SEQUENTIAL = 400
WARMUP = 40
CONCURRENCY = 50
HTTP_TOTAL = 1000
TENANT = "bench-tenant"
_ids = itertools.count(1)


class EchoAgent:
    """The smallest agent: one final text component (the channel cost alone)."""

    async def send_message(
        self, request_context: RequestContext, message: str, *, conversation_id: str | None
    ) -> AsyncIterator[UiComponent]:
        yield UiComponent(rich_component=RichTextComponent(content="echo"))

    async def record_feedback(self, request_context: RequestContext, feedback: Feedback) -> None:
        return None


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
        app_type="UserAssignedMSI", app_id=stub.app_id, app_tenant_id=TENANT,
        openid_metadata_url=stub.openid_metadata_url, token_issuer=stub.issuer,
        oauth_scope="https://api.botframework.com", default_groups=["user"],
    )


def activity(stub: FakeBotConnector) -> dict[str, Any]:
    number = next(_ids)
    return {
        "type": "message", "id": f"bench-{number}", "text": "hello",
        "serviceUrl": stub.url, "channelId": "msteams",
        "from": {"id": f"29:user-{number % 97}", "aadObjectId": f"user-{number % 97}"},
        "recipient": {"id": "28:bot", "name": "Threadline"},
        "conversation": {"id": f"a:personal-{number % 97}", "conversationType": "personal",
                         "tenantId": TENANT},
    }


async def timed(
    count: int, run: Callable[[dict[str, Any], str], Awaitable[None]], stub: FakeBotConnector,
    headers: Callable[[int], str],
) -> list[float]:
    samples: list[float] = []
    for index in range(WARMUP + count):
        body = activity(stub)
        header = headers(index)
        started = time.perf_counter()
        await run(body, header)
        if index >= WARMUP:
            samples.append(time.perf_counter() - started)
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


async def ours_sequential(
    stub: FakeBotConnector, headers: Callable[[int], str], agent: Any
) -> list[float]:
    host = TeamsHost(settings_for(stub))
    runner = web.AppRunner(host.app(agent))
    await runner.setup()  # startup hooks: signing keys prefetched

    async def run(body: dict[str, Any], header: str) -> None:
        status, _ = await host.process_activity(body, header)
        assert status == 201
        await host.turns.idle()  # until the reply was accepted by the stub

    try:
        return await timed(SEQUENTIAL, run, stub, headers)
    finally:
        await runner.cleanup()


def real_agent() -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(then="echo"), tool_registry=ToolRegistry(),
        user_resolver=_Anyone(), agent_memory=InMemoryAgentMemory(),
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


async def load(url: str, stub: FakeBotConnector, header: str,
               replies: Callable[[], Awaitable[None]]) -> dict[str, float]:
    """POST ``HTTP_TOTAL`` activities with ``CONCURRENCY`` in flight; acks/s and replies/s."""
    bodies = [activity(stub) for _ in range(HTTP_TOTAL)]
    queue = iter(bodies)
    statuses: list[int] = []
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            for body in queue:
                async with session.post(url, json=body,
                                        headers={"Authorization": header}) as response:
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


async def ours_http(stub: FakeBotConnector, header: str) -> dict[str, float]:
    host = TeamsHost(settings_for(stub))
    runner, url = await serve(host.app(EchoAgent()))
    try:
        return await load(url, stub, header, host.turns.idle)
    finally:
        await runner.cleanup()


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": statistics.median(ordered) * 1e3,
        "p90_ms": ordered[int(len(ordered) * 0.9)] * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
    }


async def main() -> dict[str, Any]:
    logging.disable(logging.WARNING)
    stub = start_stub()
    header = stub.sign(service_url=stub.url, expires_in=3600)
    fresh = [stub.sign(service_url=stub.url, claims={"jti": str(i)})
             for i in range(WARMUP + SEQUENTIAL)]
    stock = summary(await stock_sequential(stub, header))
    ours = summary(await ours_sequential(stub, lambda _: header, EchoAgent()))
    ours_fresh = summary(await ours_sequential(stub, fresh.__getitem__, EchoAgent()))
    full = summary(await ours_sequential(stub, lambda _: header, real_agent()))
    stock_load = await stock_http(stub, header)
    ours_load = await ours_http(stub, header)
    return {
        "sequential_activities": SEQUENTIAL,
        "stock_p50_ms": round(stock["p50_ms"], 3),
        "stock_p90_ms": round(stock["p90_ms"], 3),
        "threadline_p50_ms": round(ours["p50_ms"], 3),
        "threadline_p90_ms": round(ours["p90_ms"], 3),
        "threadline_fresh_token_p50_ms": round(ours_fresh["p50_ms"], 3),
        "threadline_full_agent_p50_ms": round(full["p50_ms"], 3),
        "speedup_p50": round(stock["p50_ms"] / ours["p50_ms"], 2),
        "goal_p50_ms": 1.0,
        "meets_goal": ours["p50_ms"] <= 1.0,
        "http_concurrency": CONCURRENCY,
        "http_activities": HTTP_TOTAL,
        "stock_http_acks_per_s": round(stock_load["acks_per_s"], 1),
        "stock_http_replies_per_s": round(stock_load["replies_per_s"], 1),
        "threadline_http_acks_per_s": round(ours_load["acks_per_s"], 1),
        "threadline_http_replies_per_s": round(ours_load["replies_per_s"], 1),
    }


if __name__ == "__main__":
    started = time.perf_counter()
    figures = asyncio.run(main())
    print("Teams ingress, one activity (JWT validated) to the reply accepted by a local stub")
    print(f"  stock botbuilder CloudAdapter + bare handler: p50 {figures['stock_p50_ms']:.3f} ms"
          f"  p90 {figures['stock_p90_ms']:.3f} ms")
    print(f"  threadline host + echo agent:                 p50 "
          f"{figures['threadline_p50_ms']:.3f} ms  p90 {figures['threadline_p90_ms']:.3f} ms"
          f"  ({figures['speedup_p50']}x faster; goal <= 1 ms: "
          f"{'met' if figures['meets_goal'] else 'NOT met'})")
    print(f"  threadline, a new token on every activity:   p50 "
          f"{figures['threadline_fresh_token_p50_ms']:.3f} ms")
    print(f"  threadline host + full Agent (scripted LLM):  p50 "
          f"{figures['threadline_full_agent_p50_ms']:.3f} ms")
    print(f"Loopback HTTP, {CONCURRENCY} concurrent, {HTTP_TOTAL} activities")
    print(f"  stock:      {figures['stock_http_acks_per_s']:.0f} acks/s, "
          f"{figures['stock_http_replies_per_s']:.0f} replies/s")
    print(f"  threadline: {figures['threadline_http_acks_per_s']:.0f} acks/s, "
          f"{figures['threadline_http_replies_per_s']:.0f} replies/s")
    print(f"(ran in {time.perf_counter() - started:.1f} s)")
    print(result_line("teams_ingress", **figures))
