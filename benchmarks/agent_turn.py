"""Per-turn overhead of the agent with a zero-latency LLM, against the reference (vanna 2.0.2).

Scenarios: (a) a text reply, (b) one tool call then a reply; ``--turns`` turns after warm-up,
each in a new conversation, streaming on, no observability. The reference runs in its own
virtualenv (created under ~/.cache/threadline-bench on first use) in the same run, interleaved
with ours over ``--rounds`` rounds; we quote medians of the rounds' p50 and their ratio.
(Import time: ``benchmarks/import_time.py``.)

    python benchmarks/agent_turn.py [--turns 2000] [--rounds 3] [--no-install]

``--no-install`` never creates the reference's virtualenv: without one, only our side runs
(the reason is printed). Goal: each scenario's p50 <= 0.25x the reference's, printed with
"met" or "NOT met" (not met when the reference did not run). The last line printed is one
JSON object, with each goal's value, goal and verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reference import reference_python
from _stats import Goals, result_line, summary_us

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    LlmRequest,
    LlmResponse,
    LlmService,
    LlmStreamChunk,
    RequestContext,
    StaticUserResolver,
    Tool,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResult,
    User,
)

HERE = Path(__file__).resolve().parent


class EchoArgs(BaseModel):
    text: str


class Echo(Tool[EchoArgs]):
    """The tool of scenario (b): returns its text (the reference's twin: vanna_turn.Echo)."""

    name = "echo"
    description = "Echo the text back"

    def get_args_schema(self) -> type[EchoArgs]:
        return EchoArgs

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"echo: {args.text}")


class ZeroLatency(LlmService):
    """The LLM of both scenarios, answering at once (the reference's twin:
    ``vanna_turn.ZeroLatency``): a tool call to a user message when ``use_tool``, else text."""

    def __init__(self, use_tool: bool) -> None:
        self.use_tool = use_tool

    def _respond(self, request: LlmRequest) -> LlmResponse:
        if self.use_tool and request.messages[-1].role == "user":
            call = ToolCall(id="call_1", name="echo", arguments={"text": "hi"})
            return LlmResponse(tool_calls=[call], finish_reason="tool_use")
        return LlmResponse(content="Hello there", finish_reason="end_turn")

    async def send_request(self, request: LlmRequest) -> LlmResponse:
        return self._respond(request)

    async def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]:
        response = self._respond(request)
        if response.content:
            yield LlmStreamChunk(content=response.content)
        yield LlmStreamChunk(tool_calls=response.tool_calls, finish_reason=response.finish_reason)


async def ours(use_tool: bool, turns: int, warmup: int) -> list[int]:
    registry = ToolRegistry()
    registry.register_local_tool(Echo(), ["user"])
    agent = Agent(
        llm_service=ZeroLatency(use_tool),
        tool_registry=registry,
        user_resolver=StaticUserResolver(User(id="u1", group_memberships=["user"])),
        agent_memory=InMemoryAgentMemory(),
    )
    context, samples = RequestContext(), []
    for index in range(warmup + turns):
        started = time.perf_counter_ns()
        async for _ in agent.send_message(context, "hello"):
            pass
        if index >= warmup:
            samples.append(time.perf_counter_ns() - started)
    return samples


def reference(python: Path, turns: int, warmup: int) -> dict[str, list[int] | int]:
    out = subprocess.run(
        [str(python), str(HERE / "reference" / "vanna_turn.py"), str(turns), str(warmup)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def median_summary(summaries: list[dict[str, float]]) -> dict[str, float]:
    """The median of each figure over the rounds, and the range of the rounds' p50."""
    medians = {key: statistics.median(s[key] for s in summaries) for key in summaries[0]}
    p50s = [s["p50_us"] for s in summaries]
    return medians | {"p50_us_min": min(p50s), "p50_us_max": max(p50s)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="skip the reference unless its virtualenv already exists",
    )
    args = parser.parse_args()
    import logging

    logging.disable(logging.CRITICAL)
    python = reference_python(install=not args.no_install)
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    reference_rss_kb = 0
    for _ in range(args.rounds):
        for scenario in ("text", "tool"):
            samples = asyncio.run(ours(scenario == "tool", args.turns, args.warmup))
            runs.setdefault((scenario, "ours"), []).append(summary_us(samples))
        if python is not None:
            ref = reference(python, args.turns, args.warmup)
            reference_rss_kb = int(ref["peak_rss_kb"])  # type: ignore[arg-type]
            for scenario in ("text", "tool"):
                runs.setdefault((scenario, "reference"), []).append(
                    summary_us(ref[scenario])  # type: ignore[arg-type]
                )
    figures: dict[str, object] = {"turns": args.turns, "rounds": args.rounds}
    for (scenario, impl), summaries in runs.items():
        medians = figures[f"{scenario}_{impl}"] = median_summary(summaries)
        print(
            f"{scenario:5} {impl:9} mean {medians['mean_us']:8.1f} µs  "
            f"p50 {medians['p50_us']:8.1f} µs [{medians['p50_us_min']}..{medians['p50_us_max']}]"
            f"  p99 {medians['p99_us']:8.1f} µs"
        )
    goals = Goals()
    for scenario in ("text", "tool"):
        if (scenario, "reference") not in runs:
            verdict = goals.check(f"{scenario}_p50_ratio", None, "<=", 0.25)
            print(f"{scenario:5} p50 ratio ours/reference: no reference run {verdict}")
        else:
            ours_p50 = median_summary(runs[(scenario, "ours")])["p50_us"]
            ratio = ours_p50 / median_summary(runs[(scenario, "reference")])["p50_us"]
            per_round = [
                o["p50_us"] / r["p50_us"]
                for o, r in zip(
                    runs[(scenario, "ours")], runs[(scenario, "reference")], strict=True
                )
            ]
            figures[f"{scenario}_p50_ratio"] = round(ratio, 3)
            figures[f"{scenario}_p50_ratio_rounds"] = [
                round(min(per_round), 3),
                round(max(per_round), 3),
            ]
            print(
                f"{scenario:5} p50 ratio ours/reference: {ratio:.3f} "
                f"[{min(per_round):.3f}..{max(per_round):.3f}] "
                f"{goals.check(f'{scenario}_p50_ratio', round(ratio, 3), '<=', 0.25)}"
            )
    own_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures["peak_rss_mb_ours"] = round(own_rss_kb / 1024, 1)
    if python is not None:
        figures["peak_rss_mb_reference"] = round(reference_rss_kb / 1024, 1)
    print(
        f"peak RSS: ours {figures['peak_rss_mb_ours']} MB, "
        f"reference {figures.get('peak_rss_mb_reference')} MB"
    )
    print(result_line("agent_turn", goals, **figures))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
