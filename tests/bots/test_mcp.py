"""bots/mcp: the OAuth callback people's sign-ins come back to (never a 5xx, each sign-in
finished once, the waiting question asked again), and which agent gets which servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core import Agent, ScriptedLlmService, ScriptedResponse, StaticUserResolver
from agent_core.components import SignInComponent
from agent_core.mcp import McpHub, McpServerConfig, McpSettings
from agent_core.mcp.hub import SignedIn
from agent_core.mcp.testing import sign_in
from agent_core.tools import ToolRegistry
from bots.mcp import CALLBACK_PATH, attach_servers, callback
from bots.profiles import Profile, ProfileRouter
from tests.mcp.conftest import (
    ANA,
    agent_with,
    ask,
    hubs,
    running_oauth_tickets,
    tickets,
)


@pytest.fixture
async def make_hub() -> AsyncIterator[Callable[..., McpHub]]:
    async with hubs() as make:
        yield make


@pytest.fixture
async def served(
    make_hub: Callable[..., McpHub],
) -> AsyncIterator[tuple[McpHub, TestClient, list[SignedIn]]]:
    with running_oauth_tickets() as oauth_tickets:
        hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
        asked: list[SignedIn] = []

        async def again(signed: SignedIn) -> None:
            asked.append(signed)

        app = web.Application()
        app.router.add_get(CALLBACK_PATH, callback(hub, again))
        async with TestClient(TestServer(app, host="127.0.0.1")) as http:
            yield hub, http, asked


async def _callback_path(hub: McpHub, person: str) -> str:
    agent, _ = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "connect"], ANA)
    shown = await ask(agent, "my tickets?", conversation_id="thread-9")
    [prompt] = [c.rich_component for c in shown if isinstance(c.rich_component, SignInComponent)]
    back = urlsplit(await sign_in(prompt.url, person))
    return f"{back.path}?{back.query}"


async def test_the_callback_finishes_a_sign_in_once_and_asks_the_question_again(served) -> None:  # type: ignore[no-untyped-def]
    hub, http, asked = served
    path = await _callback_path(hub, "ana")
    response = await http.get(path)
    assert response.status == 200
    page = await response.text()
    assert "Connected to tickets" in page and "your question is being answered" in page
    [signed] = asked
    assert signed.person == ANA.id and signed.waiting is not None
    assert (signed.waiting.conversation_id, signed.waiting.question) == ("thread-9", "my tickets?")
    replay = await http.get(path)
    assert replay.status == 400 and "used already" in await replay.text()
    assert len(asked) == 1


async def test_a_sign_in_is_audited_without_its_token(make_hub: Callable[..., McpHub]) -> None:
    """Issue 39: who connected which server, where, is a record of the audit trail."""
    from agent_core.audit_trail import TrailAuditLogger
    from agent_core.state.audit import MemoryAuditStore

    store = MemoryAuditStore()
    with running_oauth_tickets() as oauth_tickets:
        hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())

        async def again(signed: SignedIn) -> None:
            return None

        app = web.Application()
        app.router.add_get(CALLBACK_PATH, callback(hub, again, audit=TrailAuditLogger(store)))
        async with TestClient(TestServer(app, host="127.0.0.1")) as http:
            response = await http.get(await _callback_path(hub, "ana"))
            assert response.status == 200
    [record] = await store.records()
    assert (record.kind, (record.details or {})["server"]) == ("sign_in", "tickets")
    assert record.person == (await store.pseudonyms()).of(ANA.id)
    assert "token" not in record.model_dump_json().replace("redacted", "")


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?code=x",
        "?state=forged.state&code=x",
        "?state=" + "a" * 5000 + "&code=x",
        "?state=%3Cscript%3Ealert(1)%3C/script%3E.x&code=%00",
        "?state=a.b&error=access_denied",
    ],
)
async def test_a_callback_that_finishes_nothing_gets_a_page_never_a_5xx(served, query: str) -> None:  # type: ignore[no-untyped-def]
    _, http, asked = served
    response = await http.get(CALLBACK_PATH + query)
    assert response.status == 400
    page = await response.text()
    assert "<script>" not in page
    assert asked == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state=st.text(max_size=300), code=st.text(max_size=50))
async def test_any_callback_query_is_answered_without_a_5xx(served, state: str, code: str) -> None:  # type: ignore[no-untyped-def]
    _, http, asked = served
    response = await http.get(CALLBACK_PATH, params={"state": state, "code": code})
    assert response.status == 400
    assert asked == []


async def test_the_default_agent_gets_the_top_servers_and_a_profile_its_own_too(make_hub) -> None:  # type: ignore[no-untyped-def]
    settings_ = McpSettings(mcp=[tickets()])
    own = tickets(name="ledger")
    profile = Profile(name="finance", slack_channels=["C1"], mcp=[own])
    hub = make_hub([*settings_.mcp, own])

    def agent() -> Agent:
        return Agent(
            llm_service=ScriptedLlmService(),
            tool_registry=ToolRegistry(),
            user_resolver=StaticUserResolver(ANA),
        )

    default, finance = agent(), agent()
    router = ProfileRouter(default, [profile], {"finance": finance})
    attach_servers(router, hub, settings_)
    names = [
        [server.name for source in a.tool_registry.sources for server in source.servers]  # type: ignore[attr-defined]
        for a in (default, finance)
    ]
    assert names == [["tickets"], ["tickets", "ledger"]]


def test_a_profile_may_have_servers_of_its_own() -> None:
    profile = Profile.model_validate(
        {"name": "finance", "mcp": [{"name": "ledger", "url": "https://ledger.example/mcp"}]}
    )
    assert [s.name for s in profile.mcp] == ["ledger"]
    assert isinstance(profile.mcp[0], McpServerConfig)


async def test_doctor_lists_each_server_reachable_tools_and_auth() -> None:
    from cryptography.fernet import Fernet

    from agent_core.state import MemoryKeyValueStore
    from bots.mcp import doctor_checks

    settings_ = McpSettings(
        mcp=[
            tickets(),
            McpServerConfig(name="gone", command="/nonexistent/mcp"),
            McpServerConfig(name="wiki", url="https://wiki.example/mcp", auth="user"),
        ],
        mcp_token_key=Fernet.generate_key().decode(),
        mcp_callback_url="https://bot.example.com/oauth/mcp/callback",
    )
    lines = [str(c) for c in await doctor_checks(settings_, [], MemoryKeyValueStore())]
    assert lines[0] == "✓ MCP tickets (stdio, auth: none): reachable, 5 tools"
    assert lines[1].startswith("✗ MCP gone (stdio, auth: none): unreachable: ")
    assert "cannot start the server's command" in lines[1]
    assert lines[2] == "✓ MCP wiki (http, auth: each person's own): each person connects their own"
    broken = McpSettings(
        mcp=[McpServerConfig(name="wiki", url="https://w.example/mcp", auth="user")]
    )
    [problem, *_] = await doctor_checks(broken, [], MemoryKeyValueStore())
    assert problem.status == "fail" and "mcp_token_key" in problem.detail
    assert await doctor_checks(McpSettings(), [], MemoryKeyValueStore()) == []
