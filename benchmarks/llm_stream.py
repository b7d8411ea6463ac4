"""Streamed-response handling cost: ``AnthropicLlmService.stream_request`` vs the raw SDK.

Both sides use the same ``AsyncAnthropic`` client against the fake Messages API
(``agent_core.llm.testing``, on 127.0.0.1 in a background thread), which serves a
pre-rendered SSE body, so what is timed is the client side: the SDK's SSE decoding and event
construction, plus - for the service - turning events into ``LlmStreamChunk``s and
assembling tool calls. The baseline is ``client.messages.create(stream=True)`` with its raw
events iterated and dropped.

Scenarios: 1,000 text deltas in one response (cost per 1,000 deltas) and 100 tool_use blocks
with 4 ``input_json_delta``s each (cost per tool call assembled). Rounds alternate which side
goes first; medians of each side and their ratio are reported. Goal: ratio <= 1.2.

    .venv/bin/python benchmarks/llm_stream.py [--rounds 41]

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
from agent_core.llm.testing import (
    FakeAnthropic,
    RawStream,
    Reply,
    Text,
    ToolUse,
    render_stream,
)
from agent_core.users import User

MODEL = "claude-bench"
TEXT_DELTAS = 1_000
TOOL_CALLS = 100
GOAL_RATIO = 1.2


class ServerThread:
    """The fake API on its own event loop, so its work is not timed with the client's."""

    def __init__(self) -> None:
        self.fake = FakeAnthropic()
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


def text_body() -> bytes:
    deltas = [f"w{i:03d} " for i in range(TEXT_DELTAS)]
    return render_stream(Reply([Text(deltas)]), MODEL)


def tools_body() -> bytes:
    tools = [
        ToolUse(
            "run_sql",
            {"sql": f"SELECT * FROM t{i} WHERE id = {i}", "limit": i},
            id=f"toolu_{i:04d}",
            json_pieces=4,
        )
        for i in range(TOOL_CALLS)
    ]
    return render_stream(Reply(list[Text | ToolUse](tools)), MODEL)


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


async def main(rounds: int) -> dict[str, Any]:
    with ServerThread() as server:
        async with AnthropicLlmService(
            model=MODEL, api_key="sk-bench", base_url=server.fake.base_url
        ) as service:
            text = await measure(server, service, text_body(), rounds)
            tools = await measure(server, service, tools_body(), rounds)
    per_1000_deltas_ms = summarise(text, 1000 * 1000 / TEXT_DELTAS)
    per_tool_call_us = summarise(tools, 1_000_000 / TOOL_CALLS)
    print(f"rounds: {rounds} per side per scenario (medians; same client, same fake server)")
    print(
        f"text:  {TEXT_DELTAS} deltas/response  service {per_1000_deltas_ms['service']:.2f} ms"
        f"  raw SDK {per_1000_deltas_ms['raw_sdk']:.2f} ms per 1,000 deltas"
        f"  ratio {per_1000_deltas_ms['ratio']:.3f}"
    )
    print(
        f"tools: {TOOL_CALLS} tool calls/response  service {per_tool_call_us['service']:.1f} us"
        f"  raw SDK {per_tool_call_us['raw_sdk']:.1f} us per tool call"
        f"  ratio {per_tool_call_us['ratio']:.3f}"
    )
    return {
        "benchmark": "llm_stream",
        "rounds": rounds,
        "text_per_1000_deltas_ms": per_1000_deltas_ms,
        "tool_call_us": per_tool_call_us,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": max(per_1000_deltas_ms["ratio"], per_tool_call_us["ratio"]) <= GOAL_RATIO,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=41)
    result = asyncio.run(main(parser.parse_args().rounds))
    print(json.dumps(result))
