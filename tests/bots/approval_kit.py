"""A tool that changes things, and the agent of the channels' approval tests (issue 25).

``refund`` waits for approval (``approval = "always"``); whoever the configuration names
may approve it (the asker, admins and ``analysts`` here). ``Refund.runs`` counts what really
ran, across every process of a test (the tool is one object)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from agent_core import (
    Agent,
    AgentConfig,
    ScriptedLlmService,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UserResolver,
)
from agent_core.approvals import ApprovalBook, ApprovalPolicy, ToolApproval
from agent_core.llm.scripted import ScriptedResponse, ScriptEntry
from agent_core.state_factory import State
from tests.agent_kind import agent_class

APPROVERS = ["asker", "admin", "analysts"]


class RefundArgs(BaseModel):
    order: int
    note: str = ""


class Refund(Tool[RefundArgs]):
    """Refunds an order (it counts its runs instead)."""

    name = "refund"
    description = "Refund an order"
    approval = "always"

    def __init__(self) -> None:
        self.runs: list[int] = []

    def get_args_schema(self) -> type[RefundArgs]:
        return RefundArgs

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        self.runs.append(args.order)
        return ToolResult(success=True, result_for_llm=f"order {args.order} refunded")


def refund_script(order: int = 42, note: str = "", then: str = "Refunded.") -> list[ScriptEntry]:
    """The model asks to refund ``order``, then says ``then`` (after the decision)."""
    return [ScriptedResponse.tool("refund", {"order": order, "note": note}), then]


def approval_agent(
    script: Sequence[ScriptEntry],
    resolver: UserResolver,
    state: State,
    *,
    refund: Refund | None = None,
    approvers: list[str] | None = None,
    expires_after: float | None = None,
    then: ScriptEntry | None = None,
) -> Agent:
    """The channel's agent (``Agent``, or ``GraphAgent`` under ``THREADLINE_TEST_AGENT``)
    with ``refund``, its approvals kept in ``state`` (any process decides and resumes)."""
    registry = ToolRegistry()
    registry.register_local_tool(refund or Refund(), access_groups=["user"])
    policy = ApprovalPolicy(
        tools={
            "refund": ToolApproval(approvers=approvers or APPROVERS, expires_after=expires_after)
        }
    )
    return agent_class()(
        llm_service=ScriptedLlmService(script, then=then),
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=state.memory,
        conversation_store=state.conversations,
        config=AgentConfig(approvals=policy),
        approval_book=ApprovalBook(state.records),
    )
