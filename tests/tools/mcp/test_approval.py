"""The approval mapping (until approvals are enforced, the contract is this attribute):
``readOnlyHint`` -> never, ``destructiveHint`` or no hint -> always, an additive write ->
ask once; the configuration wins over the server's hints."""

from __future__ import annotations

import pytest
from mcp.types import ToolAnnotations

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
