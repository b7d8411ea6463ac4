"""The approval mapping (``Tool.approval``): ``readOnlyHint`` -> never, ``destructiveHint``
or no hint -> always, an additive write -> ask once; the configuration wins over the
server's hints; a destructive server tool waits for approval (both agents)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import ToolAnnotations

from agent_core import (
    Agent,
    AgentConfig,
    MemoryConversationStore,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    StaticUserResolver,
    ToolRegistry,
)
from agent_core.approvals import ApprovalBook, ApprovalPolicy
from agent_core.mcp import McpHub, attach
from agent_core.mcp.approval import approval_for, default_approval
from agent_core.state import MemoryKeyValueStore
from agent_core.turn.resuming import Resume
from tests.mcp.conftest import ANA, agent_with, answer, ask, tickets


@pytest.mark.parametrize(
    ("hints", "mode"),
    [
        (None, "always"),
        (ToolAnnotations(), "always"),
        (ToolAnnotations(readOnlyHint=True), "never"),
        (ToolAnnotations(readOnlyHint=True, destructiveHint=True), "never"),
        (ToolAnnotations(destructiveHint=True), "always"),
        (ToolAnnotations(readOnlyHint=False), "always"),
        (ToolAnnotations(readOnlyHint=False, destructiveHint=False), "ask_once"),
        ({"readOnlyHint": True}, "never"),
        ({"destructiveHint": "yes"}, "always"),
    ],
)
def test_hints_map_to_approval(hints: object, mode: str) -> None:
    assert default_approval(hints) == mode


def test_the_configuration_wins_over_the_hints() -> None:
    read_only = ToolAnnotations(readOnlyHint=True)
    assert approval_for("search", read_only, {"search": "always"}) == "always"
    assert approval_for("close", None, {"close": "never"}) == "never"
    assert approval_for("other", read_only, {"close": "never"}) == "never"


async def test_the_tickets_servers_tools_carry_their_approval(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets(approval={"get_ticket": "always"})])
    agent, _ = agent_with(hub, ["Hi"], ANA)
    await ask(agent, "hi")
    registry = agent.tool_registry
    modes = {
        name: getattr(registry.peek(name), "approval", None)
        for name in ("search_tickets", "get_ticket", "file_ticket", "close_ticket")
    }
    assert modes == {
        "search_tickets": "never",
        "get_ticket": "always",  # the configuration's word
        "file_ticket": "ask_once",
        "close_ticket": "always",
    }
    assert registry.peek("close_ticket").approval_mode == "always"  # type: ignore[union-attr]


def approving_agent(hub: McpHub, kind: str, *script: Any) -> Agent:
    """The agent of ``kind`` with the tickets server, its approvals kept in a book."""
    options: dict[str, Any] = {
        "llm_service": ScriptedLlmService(list(script)),
        "tool_registry": ToolRegistry(),
        "user_resolver": StaticUserResolver(ANA),
        "conversation_store": MemoryConversationStore(),
        "approval_book": ApprovalBook(MemoryKeyValueStore()),
        "config": AgentConfig(approvals=ApprovalPolicy()),
    }
    if kind == "graph":
        pytest.importorskip("langgraph")
        from agent_core.graph import GraphAgent

        agent: Agent = GraphAgent(**options)
    else:
        agent = Agent(**options)
    attach(agent, hub)
    return agent


async def status(hub: McpHub, ticket: int) -> str:
    found = await hub.connections.shared("tickets").call("get_ticket", {"ticket_id": ticket})
    return str(found.structured_content["status"])  # type: ignore[index]


@pytest.mark.parametrize("kind", ["agent", "graph"])
@pytest.mark.parametrize("approve", [True, False], ids=["approved", "denied"])
async def test_a_destructive_server_tool_waits_for_approval_and_runs_only_if_approved(  # type: ignore[no-untyped-def]
    make_hub, kind: str, approve: bool
) -> None:
    """``close_ticket`` says ``destructiveHint``: the turn pauses before the server sees the
    call; Approve runs it once (as the asker), Deny never does."""
    hub = make_hub([tickets()])
    close = ScriptedResponse.tool("close_ticket", {"ticket_id": 1})
    agent = approving_agent(hub, kind, close, "Done.")
    paused = await ask(agent, "close ticket 1", conversation_id="conv-1")
    [view] = [c.rich_component for c in paused if c.rich_component.type.value == "approval"]
    assert [call.tool for call in view.calls] == ["close_ticket"]
    assert await status(hub, 1) == "open"  # not run while it waits
    decided = await agent.decide_approval(
        RequestContext(), view.approval_id, approve=approve, conversation_id="conv-1"
    )
    assert decided.resume
    resumed = [c async for c in agent.send_message(RequestContext(), Resume(view.approval_id))]
    assert answer(resumed) == "Done."
    assert await status(hub, 1) == ("closed" if approve else "open")
    again = await agent.decide_approval(
        RequestContext(), view.approval_id, approve=True, conversation_id="conv-1"
    )
    assert not again.resume  # decided once
    assert await status(hub, 1) == ("closed" if approve else "open")


async def test_a_read_only_server_tool_runs_at_once(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets()])
    read = ScriptedResponse.tool("get_ticket", {"ticket_id": 2})
    agent = approving_agent(hub, "agent", read, "Read it.")
    shown = await ask(agent, "ticket 2?")
    assert not [c for c in shown if c.rich_component.type.value == "approval"]
    assert answer(shown) == "Read it."
