"""The approval mapping (until approvals are enforced, the contract is this attribute):
``readOnlyHint`` -> never, ``destructiveHint`` or no hint -> always, an additive write ->
ask once; the configuration wins over the server's hints."""

from __future__ import annotations

import pytest
from mcp.types import ToolAnnotations

from agent_core import ScriptedResponse
from agent_core.tools.mcp.approval import approval_for, default_approval
from tests.tools.mcp.conftest import ANA, agent_with, ask, tickets


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
    assert getattr(registry.peek("close_ticket"), "requires_approval", None) is True


async def test_a_destructive_server_tool_waits_for_approval_before_it_runs(make_hub) -> None:  # type: ignore[no-untyped-def]
    """Until approvals are enforced for every agent, GraphAgent's approval gate (which reads
    ``requires_approval``, "always") already pauses a destructive MCP tool."""
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver

    from agent_core import MemoryConversationStore, ScriptedLlmService, StaticUserResolver
    from agent_core import ToolRegistry as Registry
    from agent_core.graph import GraphAgent
    from agent_core.tools.mcp import attach

    hub = make_hub([tickets()])
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("close_ticket", {"ticket_id": 1}),
            "Closed it.",
            ScriptedResponse.tool("get_ticket", {"ticket_id": 1}),
            "It is closed.",
        ]
    )
    agent = GraphAgent(
        llm_service=llm,
        tool_registry=Registry(),
        user_resolver=StaticUserResolver(ANA),
        conversation_store=MemoryConversationStore(),
        checkpointer=InMemorySaver(),
    )
    attach(agent, hub)
    paused = await ask(agent, "close ticket 1", conversation_id="conv-1")
    [group] = [c.rich_component for c in paused if c.rich_component.type.value == "button_group"]
    approve = group.buttons[0].action
    connection = hub.connections.shared("tickets")
    before = await connection.call("get_ticket", {"ticket_id": 1})
    assert before.structured_content["status"] == "open"  # not run while it waits
    await ask(agent, approve, conversation_id="conv-1")
    after = await connection.call("get_ticket", {"ticket_id": 1})
    assert after.structured_content["status"] == "closed"
