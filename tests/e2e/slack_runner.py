"""One Slack bot process for the multi-process tests: ``python -m tests.e2e.slack_runner``.

The real wiring of ``threadline slack`` (``bots.slack.app.serve``: state from ``REDIS_URL``,
``SlackBot``, its turn worker and HTTP server), configured by the same environment, with a
scripted model instead of the demo agent. Its answers say what it was asked and how much
history it saw (``Answer to «q» after N earlier messages.``), so tests can check order and
history; a question containing "slow" streams for about 1.5 s, so a test can kill or stop
the process mid-answer. ``THREADLINE_CLAIM_AFTER`` (seconds) is how soon a dead process's turn is
taken over; ``E2E_STOP_AFTER`` when the Stop button shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys

from agent_core import Agent, ScriptedLlmService, ScriptedResponse, ToolRegistry, UserResolver
from agent_core.llm.base import LlmRequest
from agent_core.state import State, StateSettings
from bots.slack.app import serve
from bots.slack.settings import SlackSettings

LATENCY = 0.3
SLOW_SECONDS = 1.5


def answer(request: LlmRequest) -> ScriptedResponse:
    question = request.messages[-1].content or ""
    text = f"Answer to «{question}» after {len(request.messages) - 1} earlier messages."
    if "slow" not in question:
        return ScriptedResponse(text=text, latency=LATENCY)
    text += " More detail follows, word by word." * 3
    words = text.split(" ")
    chunks = [word + " " for word in words[:-1]] + [words[-1]]
    return ScriptedResponse(text=text, chunks=chunks, chunk_delay=SLOW_SECONDS / len(chunks))


def build_agent(state: State, resolver: UserResolver) -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(then=answer),
        tool_registry=ToolRegistry(),
        user_resolver=resolver,
        agent_memory=state.memory,
        conversation_store=state.conversations,
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
