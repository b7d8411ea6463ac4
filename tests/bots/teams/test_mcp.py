"""MCP servers' tools through the real Teams bot (authenticated activities in, the fake Bot
Connector out), the twin of tests/bots/slack/test_mcp.py: a tool runs for a person allowed
and is refused for another; each person connects their own account (a sign-in card to them
alone, the redirect to the bot's own callback, the waiting question answered in their
conversation) and every call carries only their own token; a destructive tool waits for
the Approve click on its card and then runs, once."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_core import Agent, AgentConfig, ScriptedLlmService, ToolRegistry
from agent_core.approvals import ApprovalBook, ApprovalPolicy
from agent_core.mcp import McpHub, attach
from agent_core.mcp.testing import sign_in
from agent_core.state_factory import State, StateSettings, build_state
from bots.teams.settings import TeamsSettings
from tests.agent_kind import agent_class
from tests.bots.slack.test_mcp import model
from tests.bots.teams.harness import ADMIN, MEMBER, TeamsHarness, teams_bot
from tests.bots.teams.test_approvals import approval_cards, approval_id_of, click
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


def agent_on(hub: McpHub, state: State) -> Callable[[Any, TeamsSettings], Agent]:
    def build(resolver: Any, settings: TeamsSettings) -> Agent:
        agent = agent_class()(
            llm_service=ScriptedLlmService(then=model),
            tool_registry=ToolRegistry(),
            user_resolver=resolver,
            approval_book=ApprovalBook(state.records),
            config=AgentConfig(approvals=ApprovalPolicy()),
        )
        attach(agent, hub)
        return agent

    return build


def said(h: TeamsHarness, conversation: str) -> str:
    """Everything the bot posted in ``conversation`` (texts and cards)."""
    return " ".join(
        str(c.body) for c in h.fake.calls if c.conversation_id == conversation and c.body
    )


async def test_a_tool_runs_for_a_person_allowed_and_is_refused_for_another(  # type: ignore[no-untyped-def]
    make_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = tickets(
        allowed_groups=["user", "admin"],
        tool_groups={"close_ticket": ["admin"]},
        approval={"close_ticket": "never"},  # who may, alone (approval has its own test)
    )
    hub = make_hub([server])
    state = build_state(StateSettings(ephemeral=True))
    async with teams_bot(monkeypatch, agent_factory=agent_on(hub, state), state=state) as h:
        await h.post(h.message("close ticket 1", user=MEMBER))
        await h.host.idle(timeout=20)
        assert "Permission denied: you may not use tool 'close_ticket'" in said(
            h, f"a:1personal-{MEMBER}"
        )
        connection = hub.connections.shared("tickets")
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "open"
        await h.post(h.message("close ticket 1", user=ADMIN, user_name="Alex Admin"))
        await h.host.idle(timeout=20)
        assert "ticket 1 closed" in said(h, f"a:1personal-{ADMIN}")
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "closed"


async def test_closing_the_bot_stops_its_stdio_servers_and_leaves_no_zombie(  # type: ignore[no-untyped-def]
    make_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = children()
    hub = make_hub([tickets()])
    state = build_state(StateSettings(ephemeral=True))
    async with teams_bot(monkeypatch, agent_factory=agent_on(hub, state), state=state) as h:
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        started = children() - before
        assert started  # the tickets server, started for the question
    assert not started & children()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in started)  # reaped, no zombie


async def test_a_destructive_tool_waits_for_approval_and_runs_once_after_approve(  # type: ignore[no-untyped-def]
    make_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``close_ticket`` says ``destructiveHint`` (no approval configured): the chat gets an
    approval card, the server sees nothing until the asker's Approve, then the call once."""
    hub = make_hub([tickets()])
    state = build_state(StateSettings(ephemeral=True))
    async with teams_bot(monkeypatch, agent_factory=agent_on(hub, state), state=state) as h:
        await h.post(h.message("close ticket 1", kind="groupChat", user=MEMBER))
        await h.host.idle(timeout=20)
        [(_, card)] = approval_cards(h)
        assert "close_ticket" in str(card)
        connection = hub.connections.shared("tickets")
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "open"
        approval_id = approval_id_of(card)
        decided = await click(h, "approve", approval_id, user=MEMBER)
        assert "Approved by" in str(decided["value"])
        await h.host.idle(timeout=20)
        assert (await connection.call("get_ticket", {"ticket_id": 1})).structured_content[
            "status"
        ] == "closed"
        assert str([c.body for c in h.fake.calls]).count("ticket 1 closed") == 1
        await click(h, "approve", approval_id, user=MEMBER)  # a second click runs nothing more
        assert str([c.body for c in h.fake.calls]).count("ticket 1 closed") == 1


async def test_two_people_each_connect_their_own_account_and_call_with_their_own_token(  # type: ignore[no-untyped-def]
    make_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_oauth_tickets() as oauth:
        hub = make_hub([oauth.server()], **oauth.hub_options())
        state = build_state(StateSettings(ephemeral=True))
        bot = teams_bot(monkeypatch, agent_factory=agent_on(hub, state), state=state)
        async with bot as h:
            for user, name, person in ((MEMBER, "Ana Lima", "ana"), ("aad-bo", "Bo", "bo")):
                conversation = f"a:1personal-{user}"
                await h.post(h.message("whoami on tickets?", user=user, user_name=name))
                await h.host.idle(timeout=20)
                [url] = [
                    action["url"]
                    for call in h.fake.calls
                    if call.conversation_id == conversation and call.body
                    for attachment in call.body.get("attachments") or []
                    for action in (attachment.get("content") or {}).get("actions") or []
                    if action.get("type") == "Action.OpenUrl"
                ]
                back = urlsplit(await sign_in(url, person))
                assert f"{back.scheme}://{back.netloc}{back.path}" == CALLBACK
                oauth.authorization.seen.clear()
                page = await h.http.get(f"{back.path}?{back.query}")
                assert page.status == 200 and "Connected to tickets" in await page.text()
                await h.host.idle(timeout=20)
                assert f"Tool said: {person}" in said(h, conversation)
                assert oauth.authorization.seen and set(oauth.authorization.seen) == {person}
