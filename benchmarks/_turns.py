"""Set-up shared by the benchmarks that time whole agent turns: a zero-latency model that
calls one tool and then answers, and the timing loop."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from agent_core import LlmRequest, ScriptedLlmService, ScriptedResponse, ToolCall


def tool_then_answer(call: ToolCall | None, answer: str) -> ScriptedLlmService:
    """A model with no latency: each turn it calls ``call`` (none: answers at once), then
    answers ``answer`` in one streamed chunk. It keeps only the newest request."""

    def respond(request: LlmRequest) -> ScriptedResponse:
        if call is not None and request.messages[-1].role == "user":
            return ScriptedResponse(tool_calls=[call])
        return ScriptedResponse(text=answer, chunks=[answer])

    return ScriptedLlmService(then=respond, keep_requests=1)


async def timed_turns(turn: Callable[[int], Awaitable[None]], count: int, warmup: int) -> list[int]:
    """Nanoseconds each of ``count`` turns took, after ``warmup`` untimed ones."""
    samples = []
    for index in range(warmup + count):
        started = time.perf_counter_ns()
        await turn(index)
        if index >= warmup:
            samples.append(time.perf_counter_ns() - started)
    return samples
