"""An MCP server's tools in an agent's turn, like any other tool: offered to the people
allowed, the permission check first, hooks and audit, results the model reads and people
see; a server that is down leaves its tools out (with a note to admins) and the rest works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_core import (
    Agent,
    InMemoryAuditLogger,
    LifecycleHook,
    ScriptedLlmService,
    ScriptedResponse,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
)
from agent_core.audit import AuditEventType
from agent_core.components import DataFrameComponent, NotificationComponent
from agent_core.mcp import attach
from tests.mcp.conftest import (
    ADMIN,
    ANA,
    OUTSIDER,
    agent_with,
    answer,
    ask,
    misbehaving,
    tickets,
    tool_messages,
)


class Note(BaseModel):
    text: str


class LocalTool(Tool[Note]):
    """One of the agent's own tools (named as the test wants)."""

    description = "A local tool."

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[str] = []

    def get_args_schema(self) -> type[Note]:
        return Note

    async def execute(self, context: ToolContext, args: Note) -> ToolResult:
        self.calls.append(args.text)
        return ToolResult(success=True, result_for_llm=f"local {self.name}: {args.text}")


def calls_logged(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["tool"] for line in path.read_text().splitlines()]


async def test_a_servers_tools_reach_the_model_and_run_for_the_asker(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets()])
    script = [ScriptedResponse.tool("search_tickets", {"query": "invoice"}), "It's #2."]
    agent, llm = agent_with(hub, script, ANA)
    assert hub.connections.shared("tickets").state == "idle"  # opened lazily, by the turn
    shown = await ask(agent, "Any invoice tickets?")
    offered = {tool.name: tool for tool in llm.requests[0].tools or []}
    assert {"search_tickets", "get_ticket", "file_ticket", "close_ticket"} <= set(offered)
    schema = offered["search_tickets"].parameters
    assert schema["properties"]["query"]["type"] == "string"
    assert offered["search_tickets"].description.endswith("(MCP server tickets)")
    [answer] = tool_messages(llm)
    assert "Invoice PDF has the wrong VAT" in answer
    tables = [c.rich_component for c in shown if isinstance(c.rich_component, DataFrameComponent)]
    assert tables and tables[0].rows[0]["title"] == "Invoice PDF has the wrong VAT"


async def test_invalid_arguments_are_refused_before_the_server_sees_them(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    hub = make_hub([misbehaving(env={"MCP_CALL_LOG": str(log)})])
    agent, llm = agent_with(hub, [ScriptedResponse.tool("echo", {"txt": 1}), "ok"], ANA)
    await ask(agent, "echo")
    [answer] = tool_messages(llm)
    assert answer.startswith("Invalid arguments for tool 'echo'")
    assert "'text' is a required property" in answer
    assert calls_logged(log) == []


async def test_permission_is_checked_first_and_nothing_reaches_the_server(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    server = misbehaving(
        env={"MCP_CALL_LOG": str(log)},
        allowed_groups=["support", "admin"],
        tool_groups={"wipe_all": ["admin"]},
    )
    hub = make_hub([server])
    agent, llm = agent_with(hub, [ScriptedResponse.tool("wipe_all"), "I can't."], ANA)
    await ask(agent, "wipe it")
    assert "wipe_all" not in {t.name for t in llm.requests[0].tools or []}
    assert tool_messages(llm) == ["Permission denied: you may not use tool 'wipe_all'"]
    outsider, outsider_llm = agent_with(
        hub, [ScriptedResponse.tool("echo", {"text": "x"}), "no"], OUTSIDER
    )
    await ask(outsider, "echo")
    assert not outsider_llm.requests[0].tools  # a server the person may not use offers nothing
    assert tool_messages(outsider_llm) == ["Tool 'echo' not found"] or tool_messages(
        outsider_llm
    ) == ["Permission denied: you may not use tool 'echo'"]
    assert calls_logged(log) == []


async def test_hooks_and_audit_see_mcp_tools_like_any_other(make_hub) -> None:  # type: ignore[no-untyped-def]
    class Seen(LifecycleHook):
        def __init__(self) -> None:
            self.tools: list[str] = []

        async def before_tool(self, tool: Tool[Any], context: ToolContext) -> None:
            self.tools.append(tool.name)

    hub = make_hub([tickets()])
    seen, audit = Seen(), InMemoryAuditLogger()
    agent = Agent(
        llm_service=ScriptedLlmService([ScriptedResponse.tool("whoami"), "done"]),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(ANA),
        lifecycle_hooks=[seen],
        audit_logger=audit,
    )
    attach(agent, hub)
    await ask(agent, "who am I?")
    assert seen.tools == ["whoami"]
    [check] = audit.of_type(AuditEventType.TOOL_ACCESS_CHECK)
    assert check.details["tool_name"] == "whoami" and check.details["access_granted"]
    assert [e.details["tool_name"] for e in audit.of_type(AuditEventType.TOOL_INVOCATION)] == [
        "whoami"
    ]


async def test_a_server_that_is_down_is_left_out_with_a_note_to_admins(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets(), tickets(name="ledger", command="/nonexistent/ledger-mcp", args=[])])
    registry = ToolRegistry()
    registry.register_local_tool(LocalTool("note"))
    agent, llm = agent_with(hub, ["Here you go."], ADMIN, registry=registry)
    shown = await ask(agent, "hi")
    offered = {t.name for t in llm.requests[0].tools or []}
    assert "note" in offered and "search_tickets" in offered
    notes = [c for c in shown if isinstance(c.rich_component, NotificationComponent)]
    assert len(notes) == 1 and notes[0].audience == "requester"
    message = notes[0].rich_component.message  # type: ignore[attr-defined]
    assert "ledger" in message and "cannot start the server's command" in message
    assert answer(shown) == "Here you go."
    member, member_llm = agent_with(hub, ["Hi."], ANA, registry=registry)
    member_shown = await ask(member, "hi")
    assert not [c for c in member_shown if isinstance(c.rich_component, NotificationComponent)]
    assert "search_tickets" in {t.name for t in member_llm.requests[0].tools or []}


async def test_a_name_that_collides_with_a_built_in_is_prefixed(make_hub, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "calls.jsonl"
    hub = make_hub([misbehaving(env={"MCP_CALL_LOG": str(log)})])
    registry = ToolRegistry()
    built_in = LocalTool("run_sql")
    registry.register_local_tool(built_in)
    script = [
        ScriptedResponse.tools(("run_sql", {"text": "SELECT 1"}), ("bad_run_sql", {"sql": "x"})),
        "both ran",
    ]
    agent, llm = agent_with(hub, script, ANA, registry=registry)
    await ask(agent, "run both")
    offered = {t.name for t in llm.requests[0].tools or []}
    assert {"run_sql", "bad_run_sql"} <= offered
    assert built_in.calls == ["SELECT 1"]
    assert tool_messages(llm) == ["local run_sql: SELECT 1", "the server's own run_sql"]
    assert calls_logged(log) == ["run_sql"]


async def test_two_servers_with_the_same_tool_name_both_get_their_prefix(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets(), tickets(name="archive")])
    agent, llm = agent_with(hub, ["Hi", "Hi again"], ANA)
    await ask(agent, "hi")  # the first turn learns both servers' tools
    await ask(agent, "hi")
    offered = {t.name for t in llm.requests[-1].tools or []}
    assert {"tickets_search_tickets", "archive_search_tickets"} <= offered
    assert "search_tickets" not in offered


async def test_one_session_per_server_per_process_reused_by_every_agent(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([tickets()])
    first, _ = agent_with(hub, [ScriptedResponse.tool("whoami"), "a"] * 3, ANA)
    second, _ = agent_with(hub, [ScriptedResponse.tool("whoami"), "b"] * 3, ADMIN)
    for _ in range(3):
        await ask(first, "who?")
        await ask(second, "who?")
    assert hub.connections.shared("tickets").sessions == 1
    assert len(hub.connections.opened()) == 1
