"""One Slack bot process for the multi-process tests: ``python -m tests.e2e.slack_runner``.

The real wiring of ``threadline slack`` (``bots.slack.app.serve``: state from ``REDIS_URL``,
``SlackBot``, its turn worker and HTTP server), configured by the same environment, with a
scripted model instead of the demo agent. Its answers say what it was asked and how much
history it saw (``Answer to «q» after N earlier messages.``), so tests can check order and
history; a question containing "slow" streams for about 1.5 s, so a test can kill or stop
the process mid-answer. ``THREADLINE_CLAIM_AFTER`` (seconds) is how soon a dead process's turn is
taken over; ``E2E_STOP_AFTER`` when the Stop button shows. With ``E2E_RUNS`` (a file) a
question containing "refund" calls a ``refund`` tool that waits for approval and writes
each run to that file; ``E2E_AGENT=graph`` serves ``GraphAgent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys

from agent_core import (
    Agent,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
    UserResolver,
)
from agent_core.approvals import ApprovalBook
from agent_core.llm.base import LlmRequest
from agent_core.state_factory import State, StateSettings
from bots.slack.app import serve
from bots.slack.settings import SlackSettings
from tests.e2e.approval_app import Refund

LATENCY = 0.3
SLOW_SECONDS = 1.5


def answer(request: LlmRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":  # the refund's result (run, or "not run"), said back
        return ScriptedResponse(text=f"Refund: {last.content}", latency=LATENCY)
    question = last.content or ""
    if "refund" in question:
        return ScriptedResponse.tool("refund", {"order": 42})
    text = f"Answer to «{question}» after {len(request.messages) - 1} earlier messages."
    if "slow" not in question:
        return ScriptedResponse(text=text, latency=LATENCY)
    text += " More detail follows, word by word." * 3
    words = text.split(" ")
    chunks = [word + " " for word in words[:-1]] + [words[-1]]
    return ScriptedResponse(text=text, chunks=chunks, chunk_delay=SLOW_SECONDS / len(chunks))


def build_agent(state: State, resolver: UserResolver) -> Agent:
    registry = ToolRegistry()
    if os.environ.get("E2E_RUNS"):
        registry.register_local_tool(Refund(), access_groups=["user"])
    kind = Agent
    if os.environ.get("E2E_AGENT") == "graph":
        from agent_core.graph import GraphAgent

        kind = GraphAgent
    return kind(
        llm_service=ScriptedLlmService(then=answer),
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=state.memory,
        conversation_store=state.conversations,
        approval_book=ApprovalBook(state.records),  # any process decides and resumes
    )


async def main() -> None:
    env = os.environ
    settings = SlackSettings.from_env(
        stop_button_after=float(env.get("E2E_STOP_AFTER", "60")), stream_interval=0.05
    )
    state = StateSettings.from_env()  # THREADLINE_CLAIM_AFTER set by the cluster
    await serve(settings, state, build_agent)


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(process)d %(levelname)s %(name)s %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
