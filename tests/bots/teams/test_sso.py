"""Teams single sign-on through the real Teams bot (signed activities into /api/messages,
the shipped ``FakeBotConnector`` as connector *and* token service, botbuilder's own
``TokenApiClient``) with a real MCP server (the ``mcp`` SDK's server API) that trusts
Entra-issued tokens: a person's token exchange connects them silently and the tool answers
with their token; a failed exchange falls back to the sign-in button (and its magic code);
forged, replayed and mismatched exchanges are refused and store nothing; in a channel only
the asker receives the card."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet

from agent_core.mcp import McpHub, McpServerConfig
from agent_core.mcp.testing import Loopback
from agent_core.state import MemoryKeyValueStore
from agent_core.state.testing import free_port
from agent_core.state_factory import StateSettings, build_state
from bots.teams.sso import FAILED_SENTENCE, OAUTH_CARD
from tests.bots.teams.harness import MEMBER, TeamsHarness, teams_bot
from tests.bots.teams.test_mcp import agent_on, said
from tests.mcp.conftest import CALLBACK, hubs

SSO_APP = "7a0f5b8e-1c2d-4e3f-9a8b-0c1d2e3f4a5b"
CONNECTION = "entra"
SSO = {
    "sso_connection": CONNECTION,
    "sso_app_id": SSO_APP,
    "sso_resource": f"api://bot.contoso.com/{SSO_APP}",
    "sso_servers": ["tickets"],
}
ENTRA_TOKENS = {"entra-ana": "ana", "entra-bo": "bo"}
"""The user tokens the fake token service issues, and whom the MCP server reads them as."""


@contextlib.contextmanager
def entra_tickets() -> Iterator[tuple[str, list[str]]]:
    """The tickets server (``examples/mcp_tickets``) accepting only Entra-issued tokens of
    ``ENTRA_TOKENS``: its URL, and who each accepted request came as."""
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings

    from examples.mcp_tickets import build_server

    seen: list[str] = []
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"

    class EntraVerifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            person = ENTRA_TOKENS.get(token)
            if person is None:
                return None
            seen.append(person)
            return AccessToken(
                token=token,
                client_id=SSO_APP,
                scopes=["tickets"],
                subject=person,
                resource=resource,
            )

    settings = AuthSettings(
        issuer_url="https://login.microsoftonline.com/contoso/v2.0",  # type: ignore[arg-type]
        resource_server_url=resource,  # type: ignore[arg-type]
        required_scopes=["tickets"],
        validate_token_resource=True,
    )
    server = build_server(auth=settings, token_verifier=EntraVerifier())
    with Loopback(server.streamable_http_app(), port=port) as running:
        yield f"{running.url}/mcp", seen


@pytest.fixture
async def sso_hub() -> AsyncIterator[tuple[McpHub, MemoryKeyValueStore, list[str]]]:
    store = MemoryKeyValueStore()
    with entra_tickets() as (url, seen):
        async with hubs() as make:
            server = McpServerConfig(name="tickets", url=url, auth="user")
            hub = make(
                [server],
                store=store,
                token_key=Fernet.generate_key().decode(),
                callback_url=CALLBACK,
            )
            yield hub, store, seen


def oauth_cards(h: TeamsHarness) -> list[tuple[Any, dict[str, Any]]]:
    """(call, OAuthCard content) of every OAuthCard the bot sent."""
    return [
        (call, attachment["content"])
        for call in h.fake.calls
        if isinstance(call.body, dict)
        for attachment in call.body.get("attachments") or []
        if attachment.get("contentType") == OAUTH_CARD
    ]


def exchange(h: TeamsHarness, exchange_id: str, token: str, **kwargs: Any) -> dict[str, Any]:
    value = {"id": exchange_id, "connectionName": CONNECTION, "token": token}
    value.update(kwargs.pop("value", {}))
    return h.invoke("signin/tokenExchange", value, **kwargs)


def exchanges(h: TeamsHarness) -> int:
    return h.fake.operations().count("exchange_token")


def stored(store: MemoryKeyValueStore) -> str:
    """Everything the shared state holds, as text (tokens must only be there sealed)."""
    return " ".join(str(value) for value in store._entries.values())


def bot(monkeypatch: pytest.MonkeyPatch, hub: McpHub, **settings: Any) -> Any:
    state = build_state(StateSettings(ephemeral=True))
    return teams_bot(monkeypatch, agent_factory=agent_on(hub, state), state=state, **settings)


async def test_a_token_exchange_connects_silently_and_the_tool_answers_with_their_token(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hub, store, seen = sso_hub
    caplog.set_level(logging.DEBUG)
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.user_tokens["teams-token-ana"] = "entra-ana"
        conversation = f"a:1personal-{MEMBER}"
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        [(call, card)] = oauth_cards(h)
        assert call.conversation_id == conversation
        assert card["connectionName"] == CONNECTION
        resource = card["tokenExchangeResource"]
        assert resource["uri"] == h.fake.sso_resource
        assert card["buttons"][0]["type"] == "signin"  # the fallback, if the exchange fails
        answered = await h.post(exchange(h, resource["id"], "teams-token-ana", user=MEMBER))
        assert answered.status == 200
        await h.host.idle(timeout=20)
        assert "Tool said: ana" in said(h, conversation)
        assert set(seen) == {"ana"}  # every request came with Ana's own Entra token
        assert "entra-ana" not in stored(store)  # sealed at rest
        assert "entra-ana" not in caplog.text and "teams-token-ana" not in caplog.text
        assert await hub.connections_of(f"teams:{_tenant(h)}:{MEMBER}") == ["tickets"]


def _tenant(h: TeamsHarness) -> str:
    from tests.adapters.teams import payloads

    return payloads.TENANT


async def test_a_failed_exchange_answers_412_and_the_sign_in_button_still_connects(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token service refuses (consent missing, a wrong Token Exchange URL): Teams gets
    412 and shows the card's button; the person signs in on the token service's page and
    Teams sends its magic code (``signin/verifyState``), which connects them."""
    hub, _, seen = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.exchange_fails = True
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        [(_, card)] = oauth_cards(h)
        exchange_id = card["tokenExchangeResource"]["id"]
        refused = await h.post(exchange(h, exchange_id, "teams-token-ana", user=MEMBER))
        assert refused.status == 412
        body = await refused.json()
        assert body["id"] == exchange_id and body["failureDetail"]
        assert card["buttons"][0]["value"].startswith(h.fake.url)  # the way in that remains
        assert await hub.connections_of(f"teams:{_tenant(h)}:{MEMBER}") == []
        assert seen == []
        wrong = await h.post(h.invoke("signin/verifyState", {"state": "000000"}, user=MEMBER))
        assert wrong.status == 412
        h.fake.magic_codes["123456"] = "entra-ana"
        verified = await h.post(h.invoke("signin/verifyState", {"state": "123456"}, user=MEMBER))
        assert verified.status == 200
        await h.host.idle(timeout=20)
        assert "Tool said: ana" in said(h, f"a:1personal-{MEMBER}")
        assert set(seen) == {"ana"}


async def test_a_forged_unsigned_exchange_is_401_and_exchanges_nothing(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: someone who reaches /api/messages posts a signin/tokenExchange without Bot
    Framework's signature (or with one of their own key) to plant a token."""
    from adapters.teams.testing import rsa_key

    hub, _, _ = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.user_tokens["teams-token-ana"] = "entra-ana"
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        [(_, card)] = oauth_cards(h)
        forged = exchange(h, card["tokenExchangeResource"]["id"], "teams-token-ana", user=MEMBER)
        assert (await h.post(forged, auth=None)).status == 401
        own_key = h.fake.sign(key=rsa_key("attacker"))
        assert (await h.post(forged, auth=own_key)).status == 401
        assert exchanges(h) == 0
        assert await hub.connections_of(f"teams:{_tenant(h)}:{MEMBER}") == []


async def test_replayed_and_mismatched_exchanges_are_refused_and_store_nothing(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attacks: Bo (signed, same tenant) sends his own Teams token with the exchange id of
    the card sent to Ana, to become Ana's connection; an exchange names another connection;
    an id no card carried; and Ana's successful exchange replayed."""
    hub, store, seen = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.user_tokens.update({"teams-token-ana": "entra-ana", "teams-token-bo": "entra-bo"})
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        [(_, card)] = oauth_cards(h)
        exchange_id = card["tokenExchangeResource"]["id"]
        ana, bo = f"teams:{_tenant(h)}:{MEMBER}", f"teams:{_tenant(h)}:aad-bo"
        as_bo = exchange(h, exchange_id, "teams-token-bo", user="aad-bo", user_name="Bo")
        assert (await h.post(as_bo)).status == 412
        other = exchange(
            h, exchange_id, "teams-token-ana", user=MEMBER, value={"connectionName": "github"}
        )
        assert (await h.post(other)).status == 412
        unknown = exchange(h, "no-such-id", "teams-token-ana", user=MEMBER)
        assert (await h.post(unknown)).status == 412
        assert exchanges(h) == 0  # none of them reached the token service
        assert await hub.connections_of(ana) == [] and await hub.connections_of(bo) == []
        assert "entra" not in stored(store)
        first = await h.post(exchange(h, exchange_id, "teams-token-ana", user=MEMBER))
        assert first.status == 200  # Bo's attempt did not use up Ana's card
        await h.host.idle(timeout=20)
        await hub.disconnect(ana, "tickets")
        replayed = await h.post(exchange(h, exchange_id, "teams-token-ana", user=MEMBER))
        assert replayed.status == 412
        assert exchanges(h) == 1
        assert await hub.connections_of(ana) == []  # the replay stored nothing
        assert set(seen) == {"ana"}


@pytest.mark.parametrize(
    ("kind", "place"),
    [("channel", "19:general@thread.tacv2"), ("groupChat", "19:group-chat-1@thread.v2")],
)
async def test_in_a_channel_or_group_chat_only_the_asker_receives_the_sign_in_card(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch, kind: str, place: str
) -> None:
    """The card is a targeted message: Teams shows it to the asker alone; nobody else in
    the conversation gets a card that signs in to the asker's question."""
    hub, _, _ = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.user_tokens["teams-token-ana"] = "entra-ana"
        await h.post(h.message("whoami on tickets?", kind=kind, user=MEMBER))
        await h.host.idle(timeout=20)
        [(call, card)] = oauth_cards(h)
        assert call.operation == "send_to_conversation"
        assert call.query.get("isTargetedActivity") == "true"  # Teams shows it to one person
        assert call.body["recipient"]["aadObjectId"] == MEMBER
        assert call.conversation_id is not None and call.conversation_id.startswith(place)
        answered = await h.post(
            exchange(
                h,
                card["tokenExchangeResource"]["id"],
                "teams-token-ana",
                kind=kind,
                user=MEMBER,
            )
        )
        assert answered.status == 200
        await h.host.idle(timeout=20)
        assert "Tool said: ana" in said(h, call.conversation_id)


async def test_a_sign_in_failure_is_told_to_the_person_in_one_sentence(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hub, _, _ = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        failure = h.invoke(
            "signin/failure", {"code": "resourcematchfailed", "message": "..."}, user=MEMBER
        )
        assert (await h.post(failure)).status == 200
        told = [c for c in h.fake.calls if c.body and c.body.get("text") == FAILED_SENTENCE]
        assert len(told) == 1
        assert caplog.text.count("resourcematchfailed") == 1


async def test_without_single_sign_on_the_ordinary_sign_in_card_is_sent(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing changes when TEAMS_SSO_CONNECTION is not set: no OAuthCard, and the
    signin/* invokes are merely acknowledged."""
    hub, _, _ = sso_hub
    async with bot(monkeypatch, hub) as h:
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        assert oauth_cards(h) == []
        stray = exchange(h, "x", "teams-token-ana", user=MEMBER)
        assert (await h.post(stray)).status == 200
        assert exchanges(h) == 0


async def test_an_expired_token_is_renewed_at_the_token_service_without_a_new_card(  # type: ignore[no-untyped-def]
    sso_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token service's tokens live 30 s here (under the one-minute margin): every call
    renews the person's token with ``GetToken``, nobody is asked to sign in again."""
    hub, store, seen = sso_hub
    async with bot(monkeypatch, hub, **SSO) as h:
        h.fake.token_lifetime = 30.0
        h.fake.user_tokens["teams-token-ana"] = "entra-ana"
        conversation = f"a:1personal-{MEMBER}"
        await h.post(h.message("whoami on tickets?", user=MEMBER))
        await h.host.idle(timeout=20)
        [(_, card)] = oauth_cards(h)
        exchange_id = card["tokenExchangeResource"]["id"]
        answered = await h.post(exchange(h, exchange_id, "teams-token-ana", user=MEMBER))
        assert answered.status == 200
        await h.host.idle(timeout=20)
        await h.post(h.message("whoami on tickets again?", user=MEMBER))
        await h.host.idle(timeout=20)
        assert said(h, conversation).count("Tool said: ana") == 2
        assert len(oauth_cards(h)) == 1  # no second card
        renewals = [c for c in h.fake.calls if c.operation == "get_user_token"]
        assert renewals and all(c.status == 200 and not c.query.get("code") for c in renewals)
        assert "entra-ana" not in stored(store)
        assert set(seen) == {"ana"}


def test_single_sign_on_settings_say_what_is_missing() -> None:
    from pydantic import ValidationError

    from bots.teams.settings import TeamsSettings

    identity = {"app_id": "b", "app_type": "UserAssignedMSI", "app_tenant_id": "t"}
    assert TeamsSettings(**identity, **SSO).sso_enabled
    assert not TeamsSettings(**identity).sso_enabled
    with pytest.raises(ValidationError, match="single sign-on needs TEAMS_SSO_APP_ID"):
        TeamsSettings(**identity, sso_connection=CONNECTION)
    with pytest.raises(ValidationError, match="single sign-on needs MicrosoftAppId"):
        TeamsSettings(sso_connection=CONNECTION, sso_app_id=SSO_APP)
