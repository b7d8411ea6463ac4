"""Connections that stay up: opened on first use, reused, supervised (a crashed stdio server
is restarted with backoff, a stopped bot leaves no process behind), an HTTP session the
server forgot is opened again, and changed tools are picked up."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core import ScriptedResponse
from agent_core.mcp import McpError, McpServerConfig
from agent_core.mcp.backoff import Backoff
from agent_core.mcp.connection import McpConnection
from tests.mcp.conftest import (
    ANA,
    HttpProcess,
    agent_with,
    ask,
    children,
    misbehaving,
    tickets,
    tool_messages,
    zombie,
)


async def until(done: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for a state the supervisor reaches on its own (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("the condition was not reached in time")
        await asyncio.sleep(0.02)


async def test_a_stdio_server_is_started_on_first_use_and_stopped_with_the_bot() -> None:
    before = children()
    connection = McpConnection(tickets())
    assert connection.state == "idle" and children() == before
    tools = await connection.tools()
    assert "search_tickets" in {t.name for t in tools}
    [server] = children() - before
    await connection.aclose()
    assert connection.state == "closed"
    assert children() == before
    assert not zombie(server) and not os.path.exists(f"/proc/{server}")


async def test_a_crashed_server_is_restarted_with_backoff_and_no_zombie_is_left() -> None:
    before = children()
    backoff = Backoff(first=0.3, most=5, jitter=0.0)
    connection = McpConnection(tickets(), backoff=backoff)
    await connection.tools()
    [first] = children() - before
    os.kill(first, signal.SIGKILL)
    await until(lambda: connection.state == "down" and connection.retry_in() > 0)
    with pytest.raises(Exception, match="is unavailable: its process exited"):
        await connection.call("whoami", {})  # during the wait: at once, no hang
    assert 0 < connection.retry_in() <= 0.3
    await until(lambda: connection.state == "up")
    assert connection.sessions == 2
    [second] = children() - before
    assert second != first and not os.path.exists(f"/proc/{first}")  # reaped
    os.kill(second, signal.SIGKILL)
    await until(lambda: connection.state == "down" and connection.retry_in() > 0)
    assert 0.3 < connection.retry_in() <= 0.6  # twice as long, a second failure in a row
    await until(lambda: connection.state == "up")
    result = await connection.call("whoami", {})
    assert not result.is_error
    await connection.aclose()
    assert children() == before


async def test_a_server_that_cannot_start_is_retried_less_and_less_often() -> None:
    backoff = Backoff(first=0.05, most=0.4, jitter=0.0)
    connection = McpConnection(
        McpServerConfig(name="gone", command="/nonexistent/mcp"), backoff=backoff
    )
    started = time.monotonic()
    with pytest.raises(McpError, match="cannot start the server's command"):
        await connection.tools()
    await until(lambda: backoff.failures >= 5)
    assert time.monotonic() - started >= 0.05 + 0.1 + 0.2 + 0.4  # each wait twice the last
    assert connection.retry_in() <= 0.4  # never more than ``most``
    await connection.aclose()


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_changed_tools_are_picked_up(make_hub, protocol: str) -> None:  # type: ignore[no-untyped-def]
    env = {"MCP_BROKEN_SCHEMAS": "0"}
    server = misbehaving(protocol=protocol, env=env, approval={"grow": "never"})
    hub = make_hub([server])
    agent, llm = agent_with(hub, [ScriptedResponse.tool("grow"), "grown", "hi"], ANA)
    await ask(agent, "grow")
    assert "grown" not in {t.name for t in llm.requests[0].tools or []}
    await until(lambda: hub.connections.shared("bad")._tools is None)
    await ask(agent, "again")
    assert "grown" in {t.name for t in llm.requests[-1].tools or []}
    assert hub.connections.shared("bad").sessions == 1


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_flood_of_tools_changed_costs_one_listing_at_the_next_turn(  # type: ignore[no-untyped-def]
    make_hub, protocol: str, tmp_path: Path
) -> None:
    """Attack: a server says its tools changed hundreds of times in a row; the bot lists
    them again once, when a turn needs them, and the session stays up."""
    log = tmp_path / "lists.log"
    env = {"MCP_BROKEN_SCHEMAS": "0", "MCP_LIST_LOG": str(log)}
    hub = make_hub([misbehaving(protocol=protocol, env=env)])
    agent, llm = agent_with(hub, [ScriptedResponse.tool("flood"), "done", "hi"], ANA)
    await ask(agent, "flood")
    listed = log.read_text().count("tools/list")
    await until(lambda: hub.connections.shared("bad")._tools is None)
    await ask(agent, "again")
    assert log.read_text().count("tools/list") == listed + 1
    assert "flood" in {t.name for t in llm.requests[-1].tools or []}
    assert hub.connections.shared("bad").sessions == 1


async def test_an_http_session_the_server_forgot_is_opened_again(
    make_hub, http_tickets: HttpProcess
) -> None:  # type: ignore[no-untyped-def]
    server = McpServerConfig(name="tickets", url=http_tickets.url, protocol="legacy")
    hub = make_hub([server])
    script = [ScriptedResponse.tool("whoami"), "a", ScriptedResponse.tool("whoami"), "b"]
    agent, llm = agent_with(hub, script, ANA)
    await ask(agent, "who?")
    connection = hub.connections.shared("tickets")
    assert connection.sessions == 1
    http_tickets.stop()
    http_tickets.start()  # a new process on the same port: it knows no session
    await ask(agent, "who?")
    assert tool_messages(llm)[-1] == "someone"
    assert connection.sessions == 2


async def test_an_http_server_down_then_back(make_hub, http_tickets: HttpProcess) -> None:  # type: ignore[no-untyped-def]
    server = McpServerConfig(name="tickets", url=http_tickets.url, connect_timeout=5)
    hub = make_hub([server])
    agent, llm = agent_with(hub, ["one", "two", "three"], ANA)
    await ask(agent, "hi")
    assert "whoami" in {t.name for t in llm.requests[-1].tools or []}
    http_tickets.stop()
    connection = hub.connections.shared("tickets")
    await ask(agent, "hi")  # the listing is cached; a call would find it down
    with pytest.raises(Exception, match="tickets"):
        await connection.call("whoami", {})
    await until(lambda: connection.state in ("down", "connecting"))
    http_tickets.start()
    await until(lambda: connection.state == "up", timeout=60)
    await ask(agent, "hi")
    assert "whoami" in {t.name for t in llm.requests[-1].tools or []}


async def test_doctor_lists_each_server_reachable_tools_and_auth(make_hub) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub(
        [
            tickets(),
            McpServerConfig(name="gone", command="/nonexistent/mcp"),
        ]
    )
    rows = {row.name: row for row in await hub.status()}
    assert (rows["tickets"].state, rows["tickets"].tools, rows["tickets"].auth) == ("up", 5, "none")
    assert rows["gone"].state == "down" and "cannot start" in rows["gone"].detail


async def test_sessions_close_with_the_hub_even_mid_call(make_hub) -> None:  # type: ignore[no-untyped-def]
    before = children()
    hub = make_hub([misbehaving(call_timeout=60)])
    connection = hub.connections.shared("bad")
    await connection.tools()
    hanging = asyncio.create_task(connection.call("hang", {}))
    await asyncio.sleep(0.2)
    await hub.aclose()
    with pytest.raises(McpError):
        await hanging
    assert children() == before
