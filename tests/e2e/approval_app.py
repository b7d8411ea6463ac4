"""The agent of the multi-process approval tests: ``threadline teams --app
tests.e2e.approval_app:agent`` (the real CLI wiring; the channel gives it its identity,
durable state and approval book).

A question containing "refund" calls ``refund``, which waits for approval (``approval =
"always"``); the tool's result is said back ("Refund: order 42 refunded"). Each run of the
tool is a line in ``$E2E_RUNS`` (the processes share the file), so a test can count them.
Other questions are answered "Answer to «question»".
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from agent_core import (
    Agent,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
)
from agent_core.llm.base import LlmRequest


class RefundArgs(BaseModel):
    order: int


class Refund(Tool[RefundArgs]):
    """Waits for approval; each run is one line in ``E2E_RUNS``."""

    name = "refund"
    description = "Refund an order"
    approval = "always"

    def get_args_schema(self) -> type[RefundArgs]:
        return RefundArgs

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        with open(os.environ["E2E_RUNS"], "a") as runs:
            runs.write(f"{os.getpid()} {args.order}\n")
        return ToolResult(success=True, result_for_llm=f"order {args.order} refunded")


def answer(request: LlmRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Refund: {last.content}")
    question = last.content or ""
    if "refund" in question:
        return ScriptedResponse.tool("refund", {"order": 42})
    return ScriptedResponse(text=f"Answer to «{question}»")


def agent() -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(Refund(), access_groups=["user"])
    kind = Agent
    if os.environ.get("E2E_AGENT") == "graph":
        from agent_core.graph import GraphAgent

        kind = GraphAgent
    return kind(llm_service=ScriptedLlmService(then=answer), tool_registry=registry)
