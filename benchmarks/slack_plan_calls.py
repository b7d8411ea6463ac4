"""Slack Web API calls and time for a turn that shows its plan (issue 13, item 1).

A real ``Agent`` (scripted model) runs turns whose model calls N tools at once (a group of
parallel steps: N + 1 tasks, 2N + 2 task updates) or one after the other (N model rounds,
at most the agent's 20), then answers; each turn goes through the real ``SlackReplyStream``
and ``slack_sdk`` client to the shipped fake Web API (``adapters.slack.testing.FakeSlackApi``),
with the bot's default ``update_interval`` (1 s). Counted per turn: the calls that carry the
plan
(``chat.startStream`` / ``appendStream`` / ``stopStream`` with task chunks), all Web API
calls, and the turn's wall time (median). The anchor is the task updates the agent yielded:
what one call per update would cost. Goal: a plan costs at most 3 calls per turn whatever N
(the updates of a burst go out together), and the 50-step plan shows at most 40 tasks.

    .venv/bin/python benchmarks/slack_plan_calls.py [--turns 20] [--steps 2,10,50]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _stats import result_line  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from slack_sdk.web.async_client import AsyncWebClient  # noqa: E402

from adapters.slack.context import ReplyTarget  # noqa: E402
from adapters.slack.stream import SlackReplyStream  # noqa: E402
from adapters.slack.testing import FakeSlackApi  # noqa: E402
from agent_core import (  # noqa: E402
    Agent,
    InMemoryAgentMemory,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    User,
)
from agent_core.components import TaskTrackerUpdateComponent, ToolStatusComponent  # noqa: E402

GOAL_CALLS = 3
PLAN_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


class StepArgs(BaseModel):
    n: int = 0


class Step(Tool[StepArgs]):
    name = "step"
    description = "One quick step"

    def get_args_schema(self) -> type[StepArgs]:
        return StepArgs

    async def execute(self, context: ToolContext, args: StepArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"step {args.n} done")


def script(steps: int, parallel: bool) -> list[ScriptedResponse | str]:
    if parallel:
        calls = [("step", {"n": i}) for i in range(steps)]
        return [ScriptedResponse.tools(*calls), "All done."]
    return [*(ScriptedResponse.tool("step", {"n": i}) for i in range(steps)), "All done."]


def agent(turn_script: list[ScriptedResponse | str]) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(Step(), access_groups=["user"])
    return Agent(
        llm_service=ScriptedLlmService(turn_script),
        tool_registry=registry,
        user_resolver=StaticUserResolver(User(id="u1", group_memberships=["user"])),
        agent_memory=InMemoryAgentMemory(),
    )


def plan_calls(fake: FakeSlackApi) -> int:
    return sum(
        1
        for call in fake.calls
        if call.method in PLAN_METHODS
        and any(c.get("type") != "markdown_text" for c in call.args.get("chunks") or [])
    )


async def one_turn(fake: FakeSlackApi, steps: int, parallel: bool, n: int) -> dict[str, Any]:
    fake.calls.clear()
    client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
    target = ReplyTarget("C1", f"{n}.000100", "T1", "U1")
    updates = 0
    started = time.perf_counter()
    async with SlackReplyStream(client, target, flush_interval=0) as reply:
        answer = agent(script(steps, parallel)).send_message(
            RequestContext(), "go", conversation_id=f"c{n}"
        )
        async for component in answer:
            rich = component.rich_component
            updates += isinstance(rich, TaskTrackerUpdateComponent | ToolStatusComponent)
            await reply.handle(component)
        await reply.finish()
    seconds = time.perf_counter() - started
    thread = fake.thread("C1", target.thread_ts)
    shown = {c["id"] for m in thread for c in m.chunks if c["type"] == "task_update"}
    return {
        "plan_calls": plan_calls(fake),
        "calls": len(fake.calls),
        "updates": updates,
        "seconds": seconds,
        "tasks_shown": len(shown),
    }


async def measure(turns: int, sizes: list[int]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with FakeSlackApi(keep=2000) as fake:
        turn = itertools.count(1)
        for parallel in (True, False):
            # a sequential turn stops at the agent's max_tool_iterations (20 model rounds)
            for steps in sizes if parallel else sorted({min(s, 20) for s in sizes}):
                runs = [await one_turn(fake, steps, parallel, next(turn)) for _ in range(turns)]
                key = f"{'parallel' if parallel else 'sequential'}_{steps}"
                figures[key] = {
                    "plan_calls": max(r["plan_calls"] for r in runs),
                    "calls_per_turn": statistics.median(r["calls"] for r in runs),
                    "task_updates": runs[0]["updates"],
                    "tasks_shown": runs[0]["tasks_shown"],
                    "turn_ms_p50": round(statistics.median(r["seconds"] for r in runs) * 1000, 2),
                }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="turns per plan size")
    parser.add_argument("--steps", default="2,10,50", help="plan sizes, comma separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.steps.split(",")]
    figures = asyncio.run(measure(args.turns, sizes))
    print(
        f"{'turn':<14} {'plan calls':>10} {'all calls':>9} {'task updates':>12} "
        f"{'tasks shown':>11} {'p50 ms':>8}"
    )
    for key, f in figures.items():
        print(
            f"{key:<14} {f['plan_calls']:>10} {f['calls_per_turn']:>9} {f['task_updates']:>12} "
            f"{f['tasks_shown']:>11} {f['turn_ms_p50']:>8}"
        )
    worst = max(f["plan_calls"] for f in figures.values())
    most_shown = max(f["tasks_shown"] for f in figures.values())
    print(
        f"goal: at most {GOAL_CALLS} plan calls per turn: "
        f"{'met' if worst <= GOAL_CALLS else 'missed'} ({worst})"
    )
    print(
        result_line(
            "slack_plan_calls",
            turns=args.turns,
            figures=figures,
            worst_plan_calls=worst,
            most_tasks_shown=most_shown,
            goal_met=worst <= GOAL_CALLS and most_shown <= 40,
        )
    )


if __name__ == "__main__":
    main()
