"""Streamed-response handling cost: ``AnthropicLlmService.stream_request`` vs the raw SDK,
on each place Claude runs: Anthropic's API, Amazon Bedrock, Google Vertex AI, Microsoft
Foundry.

Both sides use the same SDK client of that provider (``AsyncAnthropic``,
``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``, ``AsyncAnthropicFoundry``) against the
provider's shipped fake (``agent_core.llm.testing*``, on 127.0.0.1 in a background thread),
which serves a pre-rendered body in the provider's framing (SSE; Bedrock's binary
event-stream frames, SigV4-signed requests), so what is timed is the client side: the SDK's
decoding and event construction, plus - for the service - turning events into
``LlmStreamChunk``s and assembling tool calls. The baseline is the same client's
``messages.create(stream=True)`` with its raw events iterated and dropped.

Scenarios: 1,000 text deltas in one response (cost per 1,000 deltas) and 100 tool_use blocks
with 4 ``input_json_delta``s each (cost per tool call assembled). Rounds alternate which side
goes first; medians of each side and their ratio are reported per provider. Goal: every
ratio <= 1.2.

    .venv/bin/python benchmarks/llm_stream.py [--rounds 21] [--providers anthropic,bedrock]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.base import LlmMessage, LlmRequest
from agent_core.llm.platforms import bedrock_service, foundry_service, vertex_service
from agent_core.llm.testing import FakeAnthropic, RawStream, Reply, Text, ToolUse
from agent_core.llm.testing_bedrock import FakeBedrock
from agent_core.llm.testing_foundry import FakeFoundry
from agent_core.llm.testing_vertex import FakeVertex
from agent_core.users import User

PROVIDERS = ("anthropic", "bedrock", "vertex", "foundry")

MODEL = "claude-bench"
TEXT_DELTAS = 1_000
TOOL_CALLS = 100
GOAL_RATIO = 1.2


class ServerThread:
    """The fake API on its own event loop, so its work is not timed with the client's."""

    def __init__(self, provider: str) -> None:
        fakes: dict[str, type[FakeAnthropic]] = {
            "anthropic": FakeAnthropic,
            "bedrock": FakeBedrock,
            "vertex": FakeVertex,
            "foundry": FakeFoundry,
        }
        self.fake = fakes[provider]()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop).result()
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    def serve(self, body: bytes) -> None:
        self.loop.call_soon_threadsafe(self.fake.queue, RawStream(body))


def rendered(fake: FakeAnthropic, reply: Reply) -> bytes:
    """The whole streamed body of ``reply`` in ``fake``'s framing."""
    return b"".join(fake.frame(name, data) for name, data in reply.events(MODEL))


def text_reply() -> Reply:
    deltas = [f"w{i:03d} " for i in range(TEXT_DELTAS)]
    return Reply([Text(deltas)])


def tools_reply() -> Reply:
    tools = [
        ToolUse(
            "run_sql",
            {"sql": f"SELECT * FROM t{i} WHERE id = {i}", "limit": i},
            id=f"toolu_{i:04d}",
            json_pieces=4,
        )
        for i in range(TOOL_CALLS)
    ]
    return Reply(list[Text | ToolUse](tools))


def service_for(fake: FakeAnthropic) -> AnthropicLlmService:
    """The provider's service over the fake (the same SDK client the raw side uses)."""
    match fake:
        case FakeBedrock():
            return bedrock_service(
                model=MODEL,
                aws_region=fake.region,
                aws_access_key=fake.key.access_key_id,
                aws_secret_key=fake.key.secret_access_key,
                base_url=fake.base_url,
            )
        case FakeVertex():
            return vertex_service(
                model=MODEL,
                project=fake.project,
                region=fake.region,
                access_token=fake.token,
                base_url=fake.base_url,
            )
        case FakeFoundry():
            return foundry_service(model=MODEL, api_key=fake.api_key, base_url=fake.base_url)
        case _:
            return AnthropicLlmService(model=MODEL, api_key="sk-bench", base_url=fake.base_url)


async def raw_sdk(service: AnthropicLlmService, request: LlmRequest) -> int:
    stream = await service.client.messages.create(
        model=MODEL,
        max_tokens=4096,
        stream=True,
        messages=[{"role": "user", "content": [{"type": "text", "text": "bench"}]}],
    )
    count = 0
    async with stream:
        async for _event in stream:
            count += 1
    return count


async def through_service(service: AnthropicLlmService, request: LlmRequest) -> int:
    count = 0
    async for _chunk in service.stream_request(request):
        count += 1
    return count


Side = Callable[[AnthropicLlmService, LlmRequest], Awaitable[int]]


async def measure(
    server: ServerThread, service: AnthropicLlmService, body: bytes, rounds: int
) -> dict[str, list[float]]:
    request = LlmRequest(messages=[LlmMessage(role="user", content="bench")], user=User(id="b"))
    sides: dict[str, Side] = {"service": through_service, "raw_sdk": raw_sdk}
    times: dict[str, list[float]] = {name: [] for name in sides}
    for round_number in range(rounds + 3):  # the first 3 rounds warm up
        order = list(sides) if round_number % 2 else list(reversed(sides))
        for name in order:
            server.serve(body)
            started = time.perf_counter()
            await sides[name](service, request)
            elapsed = time.perf_counter() - started
            if round_number >= 3:
                times[name].append(elapsed)
    return times


def summarise(times: dict[str, list[float]], scale: float) -> dict[str, float]:
    service = statistics.median(times["service"]) * scale
    raw = statistics.median(times["raw_sdk"]) * scale
    return {
        "service": round(service, 3),
        "raw_sdk": round(raw, 3),
        "ratio": round(service / raw, 3),
    }


async def one_provider(provider: str, rounds: int) -> dict[str, dict[str, float]]:
    with ServerThread(provider) as server:
        async with service_for(server.fake) as service:
            text = await measure(server, service, rendered(server.fake, text_reply()), rounds)
            tools = await measure(server, service, rendered(server.fake, tools_reply()), rounds)
    per_1000_deltas_ms = summarise(text, 1000 * 1000 / TEXT_DELTAS)
    per_tool_call_us = summarise(tools, 1_000_000 / TOOL_CALLS)
    print(
        f"{provider:<9} text:  service {per_1000_deltas_ms['service']:.2f} ms"
        f"  raw SDK {per_1000_deltas_ms['raw_sdk']:.2f} ms per 1,000 deltas"
        f"  ratio {per_1000_deltas_ms['ratio']:.3f}"
    )
    print(
        f"{'':<9} tools: service {per_tool_call_us['service']:.1f} us"
        f"  raw SDK {per_tool_call_us['raw_sdk']:.1f} us per tool call"
        f"  ratio {per_tool_call_us['ratio']:.3f}"
    )
    return {"text_per_1000_deltas_ms": per_1000_deltas_ms, "tool_call_us": per_tool_call_us}


async def main(rounds: int, providers: list[str]) -> dict[str, Any]:
    print(
        f"rounds: {rounds} per side per scenario (medians; same client, same fake server); "
        f"{TEXT_DELTAS} text deltas or {TOOL_CALLS} tool calls per response"
    )
    results = {provider: await one_provider(provider, rounds) for provider in providers}
    ratios = [
        figures[scenario]["ratio"]
        for figures in results.values()
        for scenario in ("text_per_1000_deltas_ms", "tool_call_us")
    ]
    return {
        "benchmark": "llm_stream",
        "rounds": rounds,
        "providers": results,
        "goal_ratio": GOAL_RATIO,
        "worst_ratio": max(ratios),
        "meets_goal": max(ratios) <= GOAL_RATIO,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument(
        "--providers",
        default=",".join(PROVIDERS),
        help="comma-separated, of " + ", ".join(PROVIDERS),
    )
    options = parser.parse_args()
    chosen = [name.strip() for name in options.providers.split(",") if name.strip()]
    if unknown := sorted(set(chosen) - set(PROVIDERS)):
        parser.error(f"unknown provider(s): {', '.join(unknown)}")
    result = asyncio.run(main(options.rounds, chosen))
    print(json.dumps(result))
