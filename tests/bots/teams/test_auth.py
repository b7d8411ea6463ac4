"""Inbound authentication (``bots.teams.ingress``: real JWTs, the fake's published keys), and
bad requests.

Every refusal happens before anything reaches the agent or the connector."""

from __future__ import annotations

import os
import time

import pytest
import requests

from adapters.teams.testing import rsa_key
from bots.teams.bot import TeamsBot
from tests.adapters.teams.payloads import TENANT
from tests.bots.teams.harness import TeamsHarness, teams_bot


def nothing_happened(bot: TeamsHarness) -> bool:
    return not bot.fake.calls and not bot.llm.requests


@pytest.fixture
async def bot(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    async with teams_bot(monkeypatch, ["ok"]) as harness:
        yield harness


async def test_valid_token_is_accepted(bot: TeamsHarness) -> None:
    assert (await bot.post(bot.message("hi", kind="groupChat"))).status == 201
    assert (await bot.final()).text == "ok"


async def test_expired_token_is_401(bot: TeamsHarness) -> None:
    """Regression: botbuilder 4.17.1 let jwt.ExpiredSignatureError escape as HTTP 500."""
    header = bot.fake.sign(expires_in=-3600)  # expired beyond the 5-minute clock skew
    response = await bot.post(bot.message("hi"), auth=header)
    assert response.status == 401
    assert nothing_happened(bot)


async def test_token_signed_by_an_unknown_key_is_401(bot: TeamsHarness) -> None:
    """Regression: botbuilder 4.17.1 crashed with IndexError (HTTP 500) on an unknown kid."""
    header = bot.fake.sign(key=rsa_key("attacker"), kid="attacker-key")
    response = await bot.post(bot.message("hi"), auth=header)
    assert response.status == 401
    assert nothing_happened(bot)


async def test_forged_signature_with_a_known_key_id_is_401(bot: TeamsHarness) -> None:
    header = bot.fake.sign(key=rsa_key("attacker"))
    assert (await bot.post(bot.message("hi"), auth=header)).status == 401
    assert nothing_happened(bot)


@pytest.mark.parametrize(
    "claims",
    [
        {"audience": "someone-elses-app"},
        {"issuer": "https://evil.example"},
        {"service_url": "https://evil.example/"},
        {"claims": {"serviceurl": None}},
    ],
    ids=["wrong-audience", "wrong-issuer", "wrong-service-url", "no-service-url"],
)
async def test_wrong_claims_are_401(bot: TeamsHarness, claims: dict) -> None:
    response = await bot.post(bot.message("hi"), auth=bot.fake.sign(**claims))
    assert response.status == 401
    assert nothing_happened(bot)


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer not.a.jwt", "Basic dXNlcg=="])
async def test_missing_or_malformed_header_is_401(bot: TeamsHarness, header: str | None) -> None:
    assert (await bot.post(bot.message("hi"), auth=header)).status == 401
    assert nothing_happened(bot)


async def test_refusals_are_counted(bot: TeamsHarness) -> None:
    await bot.post(bot.message("hi"), auth=None)
    assert b'threadline_teams_refused_total{status="401"} 1.0' in bot.host.metrics.render()


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"{not json", "application/json", 400),
        (b"[1, 2]", "application/json", 400),
        (b'{"text": "no type"}', "application/json", 400),
        (b'{"type": "message"}', "text/plain", 415),
        (b'{"type": "message", "from": "x", "conversation": 7}', "application/json", 400),
    ],
)
async def test_malformed_payloads_are_rejected(
    bot: TeamsHarness, body: bytes, content_type: str, status: int
) -> None:
    response = await bot.http.post(
        "/api/messages",
        data=body,
        headers={"Content-Type": content_type, "Authorization": bot.fake.sign()},
    )
    assert response.status == status
    assert nothing_happened(bot)


async def test_signing_keys_are_fetched_without_blocking_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: botbuilder 4.17.1 fetched OpenID metadata and keys with blocking
    ``requests.get`` on the event loop."""

    def blocking_get(*args: object, **kwargs: object) -> None:
        raise AssertionError("requests.get called on the event loop")

    monkeypatch.setattr(requests, "get", blocking_get)
    async with teams_bot(monkeypatch, ["ok"]) as bot:
        assert bot.fake.openid_requests == 1  # prefetched at startup
        assert (await bot.post(bot.message("hi", kind="groupChat"))).status == 201
        await bot.final()
        assert bot.fake.openid_requests == 1


async def test_unknown_key_refreshes_the_keys_at_most_once(bot: TeamsHarness) -> None:
    metadata = bot.host.authentication.keys[bot.fake.openid_metadata_url]
    assert metadata.fetched_at is not None
    metadata.fetched_at -= 24 * 3600 + 1  # keys look stale-ish
    before = bot.fake.openid_requests
    for _ in range(3):
        header = bot.fake.sign(key=rsa_key("attacker"), kid="rotated-key")
        assert (await bot.post(bot.message("hi"), auth=header)).status == 401
    assert bot.fake.openid_requests == before + 1


async def test_connector_clients_are_built_once_per_service_url(bot: TeamsHarness) -> None:
    """Regression: botbuilder 4.17.1 built two msrest clients (6-10 ms of CPU) per activity."""
    for index in range(3):
        await bot.post(bot.message(f"q{index}", kind="groupChat", user=f"aad-u{index}"))
    await bot.final(count=3)
    assert bot.host.outbound.credentials_built == 1  # botbuilder's connector client, once


async def test_a_validated_token_is_remembered_only_for_its_service_url(bot: TeamsHarness) -> None:
    header = bot.fake.sign(expires_in=120)
    assert (await bot.post(bot.message("hi", kind="groupChat"), auth=header)).status == 201
    until = bot.host.authentication.remembered_until(header, "msteams", bot.fake.url)
    assert until is not None and until <= time.time() + 120
    elsewhere = bot.message("hi", kind="groupChat", service_url="https://evil.example/")
    assert (await bot.post(elsewhere, auth=header)).status == 401
    long_lived = bot.fake.sign(expires_in=86_400)
    assert (await bot.post(bot.message("again", kind="groupChat"), auth=long_lived)).status == 201
    until = bot.host.authentication.remembered_until(long_lived, "msteams", bot.fake.url)
    assert until is not None and until <= time.time() + 300


async def test_answers_the_request_before_the_turn_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, ["slow answer"], latency=0.5) as bot:
        response = await bot.post(bot.message("take your time", kind="groupChat"))
        assert response.status == 201
        assert await bot.host.state.turns.pending() == 1  # recorded before the answer
        assert not bot.answers()
        await bot.final()


async def test_auth_off_without_an_app_id(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with teams_bot(
        monkeypatch,
        ["hello"],
        app_type="MultiTenant",
        app_id=None,
        app_tenant_id=None,
        allowed_tenants=[TENANT],  # default groups need the organisation's tenant (issue 35)
        openid_metadata_url=None,
        token_issuer=None,
        oauth_scope=None,
    ) as bot:
        assert isinstance(bot.host, TeamsBot) and not bot.host.settings.auth_enabled
        assert "AUTHENTICATION IS OFF" in caplog.text
        assert (await bot.post(bot.message("hi", kind="groupChat"), auth=None)).status == 201
        final = await bot.final()
        assert "Authorization" not in final.headers


async def test_health_and_metrics_endpoints(bot: TeamsHarness) -> None:
    await bot.post(bot.message("hi", kind="groupChat"))
    await bot.final()
    health = await bot.http.get("/healthz")
    assert health.status == 200
    assert await health.json() == {
        "ok": True,
        "state": {"ok": True, "backend": "memory", "detail": "ok", "latency_ms": None},
        "running_turns": 0,
        "queued_turns": 0,
        "process": os.getpid(),
    }
    metrics = await bot.http.get("/metrics")
    text = await metrics.text()
    assert 'threadline_teams_events_total{kind="message"} 1.0' in text
    assert 'threadline_teams_turns_total{outcome="completed"} 1.0' in text


async def test_signing_keys_that_cannot_be_fetched_ask_for_a_redelivery() -> None:
    """While no signing key could ever be fetched no token can be checked: 503 (the Bot
    Framework delivers the activity again), never a 401 that would lose it."""
    from adapters.teams.testing import FakeBotConnector
    from agent_core.state.testing import free_port
    from bots.teams.ingress import TokenCheck
    from bots.teams.settings import TeamsSettings
    from bots.teams.signing_keys import KeysUnavailable

    async with FakeBotConnector() as fake:
        nowhere = f"http://127.0.0.1:{free_port()}/openid/.well-known/openidconfiguration"
        settings = TeamsSettings(
            app_type="UserAssignedMSI",
            app_id=fake.app_id,
            app_tenant_id="t",
            openid_metadata_url=nowhere,
            token_issuer=fake.issuer,
            oauth_scope="https://api.botframework.com",
        )
        check = TokenCheck(settings)
        activity = {"type": "message", "serviceUrl": fake.url, "channelId": "msteams"}
        with pytest.raises(KeysUnavailable):
            await check.check(fake.sign(), activity)
