"""Each person's own sign-in (``auth = "user"``), end to end against the tickets server
behind a local OAuth 2.1 authorization server: asked once, alone; the redirect finishes the
sign-in once; tokens sealed at rest, refreshed when they expire, never logged, never used
for anyone else; ``auth = "service"``: one token for everyone allowed."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agent_core import ScriptedResponse
from agent_core.components import SignInComponent
from agent_core.mcp import McpHub, McpServerConfig
from agent_core.mcp.auth.oauth import LINK_MARGIN
from agent_core.mcp.auth.signin import SignInRefused, SignIns
from agent_core.mcp.testing import sign_in
from tests.mcp.conftest import (
    ANA,
    BO,
    OUTSIDER,
    OAuthTickets,
    agent_with,
    answer,
    ask,
    running_oauth_tickets,
    tool_messages,
)


def callback_params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def prompts(shown: list[Any]) -> list[SignInComponent]:
    return [c.rich_component for c in shown if isinstance(c.rich_component, SignInComponent)]


async def command(agent: Any, text: str) -> Any:
    """The card a command answers with (the turn's other components are its UI state)."""
    from agent_core.components import CardComponent

    shown = await ask(agent, text)
    [card] = [c for c in shown if isinstance(c.rich_component, CardComponent)]
    return card


async def connect(hub: McpHub, agent: Any, person: str, text: str = "my tickets?") -> Any:
    """Ask as ``person`` until the Connect button comes, sign in with the browser, finish."""
    shown = await ask(agent, text)
    [prompt] = prompts(shown)
    back = callback_params(await sign_in(prompt.url, person))
    return await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))


async def test_a_person_not_connected_is_asked_alone_and_answered_once_connected(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    hub = make_hub(
        [oauth_tickets.server(description="The support team's tickets.")],
        **oauth_tickets.hub_options(),
    )
    script = [
        ScriptedResponse.tool("connect_tickets"),
        "Please connect tickets first.",
        ScriptedResponse.tool("whoami"),
        "You are ana.",
    ]
    agent, llm = agent_with(hub, script, ANA)
    shown = await ask(agent, "Who am I on tickets?", conversation_id="thread-1")
    offered = {t.name: t.description for t in llm.requests[0].tools or []}
    assert set(offered) == {"connect_tickets"}
    assert "The support team's tickets." in offered["connect_tickets"]
    [prompt] = prompts(shown)
    [component] = [c for c in shown if isinstance(c.rich_component, SignInComponent)]
    assert component.audience == "requester"  # the person alone
    assert prompt.url.startswith(oauth_tickets.authorization.issuer + "/authorize?")
    assert "code_challenge_method=S256" in prompt.url
    assert "their question will be answered automatically" in tool_messages(llm)[0]
    assert answer(shown) == "Please connect tickets first."

    back = callback_params(await sign_in(prompt.url, "ana"))
    signed = await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    assert (signed.person, signed.workspace, signed.server) == (ANA.id, "T1", "tickets")
    assert signed.waiting is not None
    assert (signed.waiting.conversation_id, signed.waiting.question) == (
        "thread-1",
        "Who am I on tickets?",
    )

    again = await ask(agent, signed.waiting.question, conversation_id="thread-1")
    assert "whoami" in {t.name for t in llm.requests[-2].tools or []}
    assert tool_messages(llm)[-1] == "ana"
    assert answer(again) == "You are ana."
    assert oauth_tickets.authorization.seen[-1] == "ana"


async def test_tokens_are_sealed_at_rest_and_never_logged(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    agent, _ = agent_with(
        hub,
        [
            ScriptedResponse.tool("connect_tickets"),
            "connect",
            ScriptedResponse.tool("whoami"),
            "ok",
        ],
        ANA,
    )
    await connect(hub, agent, "ana")
    await ask(agent, "who am I?")
    assert hub.vault is not None
    record = await hub.vault.get(ANA.id, "tickets")
    assert record is not None and record.access_token is not None
    secrets = [record.access_token, record.tokens["refresh_token"]]
    stored = " ".join(str(v) for v in oauth_tickets.store._entries.values())
    keys = " ".join(oauth_tickets.store._entries)
    for secret in secrets:
        assert secret not in stored and secret not in keys
        assert secret not in caplog.text
        assert secret not in repr(record)
    assert ANA.id not in keys and "UANA" not in stored


async def test_two_people_each_call_with_their_own_token(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    script = [
        ScriptedResponse.tool("connect_tickets"),
        "connect",
        ScriptedResponse.tool("whoami"),
        "ok",
    ]
    ana, ana_llm = agent_with(hub, list(script), ANA)
    bo, bo_llm = agent_with(hub, list(script), BO)
    await connect(hub, ana, "ana")
    await connect(hub, bo, "bo")
    seen = oauth_tickets.authorization.seen
    seen.clear()
    await ask(ana, "who?")
    ana_calls = list(seen)
    seen.clear()
    await ask(bo, "who?")
    bo_calls = list(seen)
    assert tool_messages(ana_llm)[-1] == "ana" and tool_messages(bo_llm)[-1] == "bo"
    assert ana_calls and set(ana_calls) == {"ana"}  # every request of ana's turn was ana's
    assert bo_calls and set(bo_calls) == {"bo"}
    assert hub.vault is not None
    ana_token = (await hub.vault.get(ANA.id, "tickets")).access_token  # type: ignore[union-attr]
    bo_token = (await hub.vault.get(BO.id, "tickets")).access_token  # type: ignore[union-attr]
    assert ana_token != bo_token
    assert hub.connections.personal_sessions() == 2


async def test_an_expired_access_token_is_refreshed(make_hub, oauth_tickets: OAuthTickets) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    script = [ScriptedResponse.tool("connect_tickets"), "connect"]
    script += [ScriptedResponse.tool("whoami"), "ok"] * 2
    agent, llm = agent_with(hub, script, ANA)
    await connect(hub, agent, "ana")
    await ask(agent, "who?")
    assert hub.vault is not None
    before = (await hub.vault.get(ANA.id, "tickets")).access_token  # type: ignore[union-attr]
    oauth_tickets.authorization.expire(access=True)
    await ask(agent, "who?")
    assert tool_messages(llm)[-1] == "ana"
    assert oauth_tickets.authorization.refreshed == 1
    after = (await hub.vault.get(ANA.id, "tickets")).access_token  # type: ignore[union-attr]
    assert after != before


async def test_an_expired_refresh_token_asks_the_person_again_once(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    script = [ScriptedResponse.tool("connect_tickets"), "connect"]
    script += [ScriptedResponse.tool("whoami"), "ok"]
    script += [ScriptedResponse.tools(("whoami", {}), ("search_tickets", {})), "connect again"]
    script += ["fine"]
    agent, llm = agent_with(hub, script, ANA)
    await connect(hub, agent, "ana")
    await ask(agent, "who?")
    oauth_tickets.authorization.expire(access=True, refresh=True)
    shown = await ask(agent, "who, and my tickets?")
    [again] = prompts(shown)  # two calls, one Connect button
    assert all("must connect their own tickets account" in m for m in tool_messages(llm)[-2:])
    assert hub.vault is not None and await hub.vault.get(ANA.id, "tickets") is None
    await ask(agent, "hello")
    assert {t.name for t in llm.requests[-1].tools or []} == {"connect_tickets"}
    back = callback_params(await sign_in(again.url, "ana"))
    signed = await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    assert (signed.person, signed.workspace) == (ANA.id, "T1")  # bound as the first one was


async def test_a_forged_replayed_tampered_or_expired_callback_finishes_nothing(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    agent, _ = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "connect"] * 3, ANA)
    with pytest.raises(SignInRefused) as forged:
        await hub.finish_sign_in(state="made-up.state", code="code")
    assert forged.value.reason == "unknown"

    shown = await ask(agent, "tickets?")
    back = callback_params(await sign_in(prompts(shown)[0].url, "ana"))
    nonce, _, mac = back["state"].partition(".")
    with pytest.raises(SignInRefused) as tampered:
        await hub.finish_sign_in(state=f"{nonce}.{mac[:-2]}AA", code=back["code"])
    assert tampered.value.reason == "tampered"
    await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    with pytest.raises(SignInRefused) as replayed:
        await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    assert replayed.value.reason == "used"

    assert hub.sign_ins is not None and hub.vault is not None
    await hub.disconnect(ANA.id, "tickets")
    late = SignIns(oauth_tickets.store, hub.sign_ins._cipher, lifetime=-1)
    _, state = await late.start(
        person=BO.id,
        workspace="T1",
        server="tickets",
        authorization_endpoint="https://a.example/authorize",
        client={"client_id": "c"},
        redirect_uri="https://b.example/oauth/mcp/callback",
    )
    with pytest.raises(SignInRefused) as expired:
        await hub.finish_sign_in(state=state, code="code")
    assert expired.value.reason in ("expired", "unknown")
    assert await hub.vault.get(BO.id, "tickets") is None


async def test_a_declined_sign_in_stores_nothing(make_hub, oauth_tickets: OAuthTickets) -> None:  # type: ignore[no-untyped-def]
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    agent, _ = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "connect"], ANA)
    shown = await ask(agent, "tickets?")
    state = callback_params(prompts(shown)[0].url)["state"]
    with pytest.raises(SignInRefused) as declined:
        await hub.finish_sign_in(state=state, code=None, error="access_denied")
    assert declined.value.reason == "declined"
    assert hub.vault is not None and await hub.vault.get(ANA.id, "tickets") is None


async def test_a_sign_in_finished_by_another_process_is_seen_here(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    here = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    there = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    script = [
        ScriptedResponse.tool("connect_tickets"),
        "connect",
        ScriptedResponse.tool("whoami"),
        "ok",
    ]
    agent, llm = agent_with(here, script, ANA)
    shown = await ask(agent, "tickets?")
    back = callback_params(await sign_in(prompts(shown)[0].url, "ana"))
    await there.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    await ask(agent, "who?")
    assert tool_messages(llm)[-1] == "ana"


async def test_a_service_token_is_one_token_for_everyone_allowed(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    token = oauth_tickets.authorization._issue(
        "service", ["tickets"], "threadline-bot", oauth_tickets.url
    ).access_token
    server = McpServerConfig(
        name="tickets",
        url=oauth_tickets.url,
        auth="service",
        token=token,
        allowed_groups=["support"],
    )
    hub = make_hub([server])
    for person in (ANA, BO):
        agent, llm = agent_with(hub, [ScriptedResponse.tool("whoami"), "ok"], person)
        await ask(agent, "who?")
        assert tool_messages(llm) == ["threadline-bot"]
    outsider, outsider_llm = agent_with(hub, ["no tools"], OUTSIDER)
    await ask(outsider, "who?")
    assert not outsider_llm.requests[0].tools


async def test_connections_and_disconnect_are_each_persons_own(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    script = [ScriptedResponse.tool("connect_tickets"), "connect"]
    ana, _ = agent_with(hub, list(script), ANA)
    bo, _ = agent_with(hub, list(script), BO)
    await connect(hub, ana, "ana")
    listed = await command(ana, "/connections")
    assert listed.audience == "requester"
    assert "**tickets**: connected" in listed.rich_component.content  # type: ignore[attr-defined]
    bo_listed = await command(bo, "/connections")
    assert "not connected" in bo_listed.rich_component.content  # type: ignore[attr-defined]
    nothing = await command(bo, "/disconnect tickets")
    assert "had not connected" in nothing.rich_component.content  # type: ignore[attr-defined]
    assert hub.vault is not None and await hub.vault.get(ANA.id, "tickets") is not None
    done = await command(ana, "/disconnect tickets")
    assert "disconnected" in done.rich_component.content  # type: ignore[attr-defined]
    assert await hub.vault.get(ANA.id, "tickets") is None
    unknown = await command(ana, "/disconnect wiki")
    assert "one of: `tickets`" in unknown.rich_component.content  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "changes",
    [
        {"authorization_endpoint": "http://phish.example/authorize"},
        {"token_endpoint": "http://collect.example/token"},
    ],
    ids=["sign-in page", "token endpoint"],
)
async def test_an_authorization_server_naming_plain_http_elsewhere_gets_nobody_sent_there(  # type: ignore[no-untyped-def]
    make_hub, changes: dict[str, str]
) -> None:
    """Attack: the server's authorization metadata names a plain-http page on another host,
    where a person would type their password, or where their code would be sent."""
    with running_oauth_tickets(metadata=changes) as oauth:
        hub = make_hub([oauth.server()], **oauth.hub_options())
        agent, llm = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "No."], ANA)
        shown = await ask(agent, "my tickets?")
        assert prompts(shown) == []
        [told] = tool_messages(llm)
        assert "must be https" in told
        assert ".example" not in str([c.model_dump() for c in shown])
        assert oauth.authorization.waiting == {} and oauth.authorization.codes == {}


async def test_a_code_from_another_persons_sign_in_or_issuer_connects_nobody(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    """Attacks on the callback with real parts: Bo's authorization code pasted with Ana's
    state (code injection: PKCE binds each code to its own sign-in), and a callback naming
    another issuer (mix-up). Each burns the state it names; neither connects anyone."""
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    connect = [ScriptedResponse.tool("connect_tickets"), "connect"]
    ana, _ = agent_with(hub, connect * 2, ANA)
    bo, _ = agent_with(hub, connect, BO)
    ana_back = callback_params(await sign_in(prompts(await ask(ana, "tickets?"))[0].url, "ana"))
    bo_back = callback_params(await sign_in(prompts(await ask(bo, "tickets?"))[0].url, "bo"))
    with pytest.raises(SignInRefused) as injected:
        await hub.finish_sign_in(
            state=ana_back["state"], code=bo_back["code"], iss=bo_back.get("iss")
        )
    assert injected.value.reason == "failed"
    assert hub.vault is not None and await hub.vault.get(ANA.id, "tickets") is None

    again = callback_params(await sign_in(prompts(await ask(ana, "tickets?"))[0].url, "ana"))
    with pytest.raises(SignInRefused) as mixed_up:
        await hub.finish_sign_in(
            state=again["state"], code=again["code"], iss="https://other-issuer.example"
        )
    assert mixed_up.value.reason == "failed"
    assert await hub.vault.get(ANA.id, "tickets") is None
    with pytest.raises(SignInRefused) as burnt:  # the right issuer, too late: used once
        await hub.finish_sign_in(state=again["state"], code=again["code"], iss=again.get("iss"))
    assert burnt.value.reason == "used"
    assert await hub.vault.get(BO.id, "tickets") is None  # Bo's code connected nobody either


async def test_a_dead_sign_in_link_is_never_shown_again(  # type: ignore[no-untyped-def]
    make_hub, oauth_tickets: OAuthTickets
) -> None:
    """Regression: once a person's Connect link was used up (its callback declined or
    refused) or had expired, every later question showed them the same dead link."""
    hub = make_hub([oauth_tickets.server()], **oauth_tickets.hub_options())
    agent, _ = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "connect"] * 3, ANA)
    first = prompts(await ask(agent, "tickets?"))[0].url
    with pytest.raises(SignInRefused):
        await hub.finish_sign_in(state=callback_params(first)["state"], code=None, error="no")
    second = prompts(await ask(agent, "tickets?"))[0].url
    assert callback_params(second)["state"] != callback_params(first)["state"]
    back = callback_params(await sign_in(second, "ana"))
    await hub.finish_sign_in(state=back["state"], code=back["code"], iss=back.get("iss"))
    assert hub.vault is not None and await hub.vault.get(ANA.id, "tickets") is not None

    assert hub.sign_ins is not None
    hub.sign_ins.lifetime = LINK_MARGIN  # every link is past showing as soon as it is made
    bo, _ = agent_with(hub, [ScriptedResponse.tool("connect_tickets"), "connect"] * 2, BO)
    expired = prompts(await ask(bo, "tickets?"))[0].url
    fresh = prompts(await ask(bo, "tickets?"))[0].url
    assert callback_params(fresh)["state"] != callback_params(expired)["state"]
