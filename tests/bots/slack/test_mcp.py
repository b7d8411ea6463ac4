"""MCP servers' tools through the real Slack bot (signed events in, the fake Web API out):
a tool runs for a person allowed and is refused for another; a destructive tool waits for
the Approve click and then runs, once; each person connects their own
account (the Connect button to them alone, the redirect to the bot's own callback, the
waiting question answered in its thread) and every call carries only their own token."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_core import (
    Agent,
    AgentConfig,
    LlmRequest,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
)
from agent_core.approvals import ApprovalBook, ApprovalPolicy
from agent_core.mcp import McpHub, attach
from agent_core.mcp.testing import sign_in
from agent_core.state_factory import State
from tests.agent_kind import agent_class
from tests.bots.slack.harness import SlackHarness, running_bot
from tests.bots.slack.test_approvals import approval_id_of, approval_message, click
from tests.mcp.conftest import (
    CALLBACK,
    children,
    hubs,
    running_oauth_tickets,
    tickets,
)


@pytest.fixture
async def make_hub() -> AsyncIterator[Callable[..., McpHub]]:
    async with hubs() as make:
        yield make


def mention(text: str, ts: str, user: str = "U1") -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


def model(request: LlmRequest) -> ScriptedResponse | str:
    """Calls the tool the question names (or connect_tickets when that is all there is),
    then says what the tool answered."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"Tool said: {last.content}"
    offered = {tool.name for tool in request.tools or []}
    question = last.content or ""
    for name, arguments in (("close_ticket", {"ticket_id": 1}), ("whoami", {})):
        if name.split("_")[0] in question and name in offered | {"close_ticket"}:
            return ScriptedResponse.tool(name, arguments)
    if "connect_tickets" in offered:
        return ScriptedResponse.tool("connect_tickets")
    return "I cannot."


def agent_on(hub: McpHub) -> Callable[[Any, State], Agent]:
    def build(resolver: Any, state: State) -> Agent:
        agent = agent_class()(
            llm_service=ScriptedLlmService(then=model),
            tool_registry=ToolRegistry(),
            user_resolver=resolver,
            agent_memory=state.memory,
            conversation_store=state.conversations,
            approval_book=ApprovalBook(state.records),
            config=AgentConfig(approvals=ApprovalPolicy()),
        )
        attach(agent, hub)
        return agent

    return build


def thread_texts(h: SlackHarness, ts: str) -> list[str]:
    return [m.text for m in h.fake.messages if m.thread_ts == ts and m.user == "UBOT"]


async def test_a_tool_runs_for_a_person_allowed_and_is_refused_for_another(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    server = tickets(
        allowed_groups=["user", "admin"],
        tool_groups={"close_ticket": ["admin"]},
        approval={"close_ticket": "never"},  # who may, alone (approval has its own test)
    )
    hub = make_hub([server])
    async with running_bot(tmp_path, [], agent_factory=agent_on(hub)) as h:
        await h.event(mention("close ticket 1", "100.000100", user="U1"))
        await h.idle()
        refused = " ".join(thread_texts(h, "100.000100"))
        assert "Permission denied: you may not use tool 'close_ticket'" in refused
        connection = hub.connections.shared("tickets")
        still = await connection.call("get_ticket", {"ticket_id": 1})
        assert still.structured_content["status"] == "open"

        await h.event(mention("close ticket 1", "200.000100", user="UADMIN"))
        await h.idle()
        assert "ticket 1 closed" in " ".join(thread_texts(h, "200.000100"))
        closed = await connection.call("get_ticket", {"ticket_id": 1})
        assert closed.structured_content["status"] == "closed"


async def test_closing_the_bot_stops_its_stdio_servers_and_leaves_no_zombie(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    before = children()
    hub = make_hub([tickets()])
    async with running_bot(tmp_path, [], agent_factory=agent_on(hub)) as h:
        await h.event(mention("whoami on tickets?", "600.000100"))
        await h.idle()
        started = children() - before
        assert started  # the tickets server, started for the question
    assert not started & children()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in started)  # reaped, no zombie


async def test_a_destructive_tool_waits_for_approval_and_runs_once_after_approve(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    """``close_ticket`` says ``destructiveHint`` (no approval configured): the thread gets an
    approval message, the server sees nothing until the asker's Approve, then the call once."""
    hub = make_hub([tickets()])
    async with running_bot(tmp_path, [], agent_factory=agent_on(hub)) as h:
        await h.event(mention("close ticket 1", "500.000100", user="U1"))
        await h.idle()
        message = approval_message(h)
        assert "close_ticket" in str(message.blocks)
        connection = hub.connections.shared("tickets")
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "open"
        await click(h, "approve", message, user="U1")
        assert approval_id_of(message) is None  # decided: the buttons are gone
        assert "ticket 1 closed" in " ".join(thread_texts(h, "500.000100"))
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "closed"
        await click(h, "approve", message, user="U1")  # a second click runs nothing more
        assert " ".join(thread_texts(h, "500.000100")).count("ticket 1 closed") == 1


async def test_two_people_each_connect_their_own_account_and_call_with_their_own_token(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    with running_oauth_tickets() as oauth:
        hub = make_hub([oauth.server()], **oauth.hub_options())
        async with running_bot(tmp_path, [], agent_factory=agent_on(hub)) as h:
            for user, person, ts in (("U1", "ana", "300.000100"), ("U2", "bo", "400.000100")):
                await h.event(mention("whoami on tickets?", ts, user=user))
                await h.idle()
                [prompt] = [
                    c for c in h.fake.calls_to("chat.postEphemeral") if c.args["user"] == user
                ]
                assert prompt.args["thread_ts"] == ts  # in the thread, to them alone
                [button] = [b for b in prompt.args["blocks"] if b["type"] == "actions"]
                url = button["elements"][0]["url"]
                clicked = await h.action(button["elements"][0]["action_id"], "", user=user)
                assert clicked.status == 200  # Slack reports the click; it is only acked
                assert url not in str([c.args for c in h.fake.calls_to("chat.postMessage")])
                back = urlsplit(await sign_in(url, person))
                assert f"{back.scheme}://{back.netloc}{back.path}" == CALLBACK
                oauth.authorization.seen.clear()
                page = await h.http.get(f"{back.path}?{back.query}")  # the bot's own callback
                assert page.status == 200 and "Connected to tickets" in await page.text()
                await h.idle()  # the waiting question, asked again in its thread
                assert f"Tool said: {person}" in " ".join(thread_texts(h, ts))
                assert oauth.authorization.seen and set(oauth.authorization.seen) == {person}
            replay = await h.http.get(f"{back.path}?{back.query}")
            assert replay.status == 400


async def test_connecting_and_disconnecting_refresh_the_persons_home(  # type: ignore[no-untyped-def]
    make_hub, tmp_path: Path
) -> None:
    """Home refreshed when a connection is made or removed (issue 40): Ana opened Home
    before connecting; her sign-in's callback shows tickets connected there (with
    Disconnect), and ``/disconnect tickets`` typed in chat takes it away, without her
    opening Home again."""
    with running_oauth_tickets() as oauth:
        hub = make_hub([oauth.server()], **oauth.hub_options())
        async with running_bot(tmp_path, [], agent_factory=agent_on(hub)) as h:
            home = {"type": "app_home_opened", "user": "U1", "channel": "DU1", "tab": "home"}
            await h.event(home)
            assert "tickets_: not connected" in str(h.fake.views["U1"])
            await h.event(mention("whoami on tickets?", "300.000100"))
            await h.idle()
            [prompt] = h.fake.calls_to("chat.postEphemeral")
            [button] = [b for b in prompt.args["blocks"] if b["type"] == "actions"]
            back = urlsplit(await sign_in(button["elements"][0]["url"], "ana"))
            assert (await h.http.get(f"{back.path}?{back.query}")).status == 200
            await h.fake.wait_for(lambda fake: "tickets_: connected" in str(fake.views["U1"]))
            assert "Disconnect tickets" in str(h.fake.views["U1"])

            await h.event(mention("/disconnect tickets", "400.000100"))
            await h.fake.wait_for(lambda fake: "not connected" in str(fake.views["U1"]))
            assert "Disconnect tickets" not in str(h.fake.views["U1"])
