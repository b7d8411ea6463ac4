"""LLM input tokens per turn over a 5-turn thread: uncached, written to the prompt cache, read
from it, as the Messages API reports them.

The demo agent (its system prompt with the shop's schema, its five tools) talks to Claude
through ``AnthropicLlmService``, pointed at the shipped fake Messages API
(``agent_core.llm.testing.FakeAnthropic``), which accounts prompt caching the way the API
does (``cache_creation_input_tokens`` / ``cache_read_input_tokens``, tokens estimated at 4
characters). Every turn of one thread is a tool call (``run_sql``, run for real on the
sample database) and then the answer: two LLM calls. The usage of each call is what the
fake reported to the client; a call's prompt size is its whole prompt, estimated the same
way, and ``uncached`` is the rest.

The anchor, in the same run: the same requests without cache breakpoints (how every call
was sent before, and how the reference sends them): nothing is served from the cache.
Goal: from the second LLM call of a turn on, >= 80 % of input tokens read from the cache.

    .venv/bin/python benchmarks/prompt_cache.py [--turns 5]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _stats import result_line  # noqa: E402

from agent_core import LlmMiddleware, LlmRequest, LlmResponse, RequestContext  # noqa: E402
from agent_core.llm.testing import FakeAnthropic, PromptCache, Reply, Text, ToolUse  # noqa: E402
from bots.demo.agent import DemoSettings, build_demo_agent  # noqa: E402

GOAL = 0.8
QUESTIONS = [
    ("How many orders were placed last month?", "SELECT COUNT(*) FROM orders"),
    (
        "And how many of them were cancelled?",
        "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'",
    ),
    ("Which category sold the most?", "SELECT category, COUNT(*) FROM products GROUP BY category"),
    (
        "Top 5 customers by number of orders?",
        "SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id"
        " ORDER BY n DESC LIMIT 5",
    ),
    ("What is the average order size?", "SELECT AVG(quantity) FROM order_items"),
]


class Usage(LlmMiddleware):
    """Keeps the usage the API reported for each call, in order."""

    def __init__(self) -> None:
        self.calls: list[dict[str, int]] = []

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        self.calls.append(dict(response.usage or {}))
        return response


def prompt_tokens(body: dict[str, Any]) -> int:
    """The size of a request's whole prompt, counted as the fake counts cached prefixes."""
    marked = {**body, "messages": [*body["messages"][:-1], _marked(body["messages"][-1])]}
    return PromptCache(minimum_tokens=0).usage(marked).creation


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {**message, "content": [*content[:-1], {**content[-1], "cache_control": {"type": "x"}}]}


def unmarked(body: Any) -> Any:
    """``body`` without its cache breakpoints (the anchor)."""
    if isinstance(body, dict):
        return {k: unmarked(v) for k, v in body.items() if k != "cache_control"}
    if isinstance(body, list):
        return [unmarked(item) for item in body]
    return body


async def thread(turns: int) -> tuple[list[dict[str, Any]], list[dict[str, int]]]:
    """The request bodies of a ``turns``-turn thread, and the usage reported for each."""
    usage = Usage()
    async with FakeAnthropic() as fake:
        settings = DemoSettings(
            data_dir=tempfile.mkdtemp(prefix="threadline-bench-"),
            anthropic_api_key="sk-bench",
            anthropic_base_url=fake.base_url,
            anthropic_model="claude-bench",
        )
        agent = build_demo_agent(settings)
        agent.llm_middlewares.append(usage)
        context = RequestContext(
            metadata={
                "platform": "slack",
                "workspace_id": "T1",
                "user_id": "U1",
                "user_name": "Ana",
            }
        )
        for question, sql in (QUESTIONS * turns)[:turns]:
            fake.queue(
                Reply([Text(["Let me query that."]), ToolUse("run_sql", {"sql": sql})]),
                Reply.text("Here is what the data shows: ", "the numbers are above."),
            )
            async for _ in agent.send_message(context, question, conversation_id="thread-1"):
                pass
        await agent.llm_service.aclose()  # type: ignore[attr-defined]
        return [request.body for request in fake.requests], usage.calls


def per_call(bodies: list[dict[str, Any]], usage: list[dict[str, int]]) -> list[dict[str, int]]:
    calls = []
    for body, reported in zip(bodies, usage, strict=True):
        total = prompt_tokens(body)
        read = reported.get("cache_read_input_tokens", 0)
        written = reported.get("cache_creation_input_tokens", 0)
        calls.append(
            {"prompt": total, "read": read, "written": written, "uncached": total - read - written}
        )
    return calls


def anchor_calls(bodies: list[dict[str, Any]]) -> list[dict[str, int]]:
    cache = PromptCache()
    calls = []
    for body in bodies:
        plain = unmarked(body)
        counted = cache.usage(plain)
        total = prompt_tokens(plain)
        calls.append(
            {
                "prompt": total,
                "read": counted.read,
                "written": counted.creation,
                "uncached": total - counted.read - counted.creation,
            }
        )
    return calls


def share_read_after_first(calls: list[dict[str, int]]) -> float:
    """Input tokens read from the cache / all input tokens, over every turn's 2nd call."""
    later = calls[1::2]
    return sum(c["read"] for c in later) / max(1, sum(c["prompt"] for c in later))


def report(label: str, calls: list[dict[str, int]]) -> None:
    print(f"{label}: input tokens per turn (uncached / cache write / cache read; 2 calls a turn)")
    for turn in range(len(calls) // 2):
        first, second = calls[2 * turn], calls[2 * turn + 1]
        print(
            f"  turn {turn + 1}: "
            + "   ".join(
                f"call {n}: {c['uncached']:5} / {c['written']:5} / {c['read']:5} of {c['prompt']:5}"
                for n, c in ((1, first), (2, second))
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    bodies, usage = asyncio.run(thread(args.turns))
    ours, anchor = per_call(bodies, usage), anchor_calls(bodies)
    report("without breakpoints (anchor)", anchor)
    report("Threadline", ours)
    share, anchor_share = share_read_after_first(ours), share_read_after_first(anchor)
    print(
        f"read from the cache on every turn's 2nd call: {share:.1%} (anchor "
        f"{anchor_share:.1%}; goal >= {GOAL:.0%})"
    )
    totals = {key: sum(c[key] for c in ours) for key in ("prompt", "read", "written", "uncached")}
    print(
        f"over the thread: {totals['read']} of {totals['prompt']} input tokens read from the "
        f"cache ({totals['read'] / max(1, totals['prompt']):.1%}), {totals['written']} written"
    )
    print(
        result_line(
            "prompt_cache",
            turns=args.turns,
            goal=GOAL,
            read_share_second_calls=round(share, 3),
            anchor_read_share_second_calls=round(anchor_share, 3),
            calls=ours,
            anchor=anchor,
            thread_totals=totals,
        )
    )


if __name__ == "__main__":
    main()
