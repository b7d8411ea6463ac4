"""The whole Teams bot under test: the real bot and app over HTTP (real JWT validation against
the fake's published keys, real msal managed-identity token fetch) against
``FakeBotConnector``.

The bot is configured the way a sovereign cloud is: every Bot Framework endpoint comes from
settings and points at the fake; outbound tokens come from an App Service managed identity
endpoint (``IDENTITY_ENDPOINT``) the fake also serves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msal
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer
from botframework.connector.auth import ManagedIdentityAppCredentials

from adapters.fetch import FetchPolicy
from adapters.teams.files import FileOffers
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core import Agent, LifecycleHook
from agent_core.llm.scripted import ScriptedLlmService, ScriptEntry
from agent_core.state.turns import TurnQueue
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import UserResolver
from bots.files import SharedFiles
from bots.teams.app import build_web_app
from bots.teams.bot import TeamsBot, user_resolver
from bots.teams.connector import ConnectorPool
from bots.teams.settings import TeamsSettings
from tests.adapters.teams import payloads
from tests.bots.teams.agents import build_agent

ADMIN = "aad-admin"
MEMBER = "aad-ana"
DEFAULT = object()


class TeamsHarness:
    """Drive the bot as Teams would; assert on ``harness.fake``."""

    def __init__(
        self, fake: FakeBotConnector, host: TeamsBot, http: TestClient, agent: Agent
    ) -> None:
        self.fake = fake
        self.host = host
        self.http = http
        self.agent = agent

    @property
    def llm(self) -> ScriptedLlmService:
        assert isinstance(self.agent.llm_service, ScriptedLlmService)
        return self.agent.llm_service

    def message(self, text: str, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("service_url", self.fake.url)
        return payloads.message(text, **kwargs)

    def invoke(self, name: str, value: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("service_url", self.fake.url)
        return payloads.invoke(name, value, **kwargs)

    async def post(
        self, activity: dict[str, Any], *, auth: Any = DEFAULT, **headers: str
    ) -> ClientResponse:
        """POST ``activity`` to /api/messages, signed validly unless ``auth`` says otherwise
        (a header value, or None for no header)."""
        sent = {"Content-Type": "application/json", **headers}
        header = self.fake.sign(service_url=activity.get("serviceUrl")) if auth is DEFAULT else auth
        if header is not None:
            sent["Authorization"] = header
        return await self.http.post("/api/messages", json=activity, headers=sent)

    async def final(self, count: int = 1) -> ConnectorCall:
        """The ``count``-th answer message (a ``message`` the bot sent as a reply)."""
        return await self.fake.wait_for(is_answer, count=count)

    def answers(self) -> list[ConnectorCall]:
        return [c for c in self.fake.calls if is_answer(c)]


def is_answer(call: ConnectorCall) -> bool:
    return (
        call.activity_type == "message"
        and call.status in (200, 201)
        and call.operation in ("reply_to_activity", "update_activity")
        and not call.query
    )


def settings_for(fake: FakeBotConnector, **overrides: Any) -> TeamsSettings:
    values: dict[str, Any] = {
        "app_type": "UserAssignedMSI",
        "app_id": fake.app_id,
        "app_tenant_id": payloads.TENANT,
        "openid_metadata_url": fake.openid_metadata_url,
        "token_issuer": fake.issuer,
        "oauth_scope": "https://api.botframework.com",
        "admin_users": [ADMIN],
        "default_groups": ["user"],
        "stream_interval": 0.05,
    }
    if overrides.get("sso_connection"):  # the token service single sign-on talks to
        values["oauth_url"] = fake.url.rstrip("/")
    return TeamsSettings(**{**values, **overrides})


Seed = Callable[[FakeBotConnector], Awaitable[None]]
AgentFactory = Callable[[UserResolver, TeamsSettings], Agent]


@asynccontextmanager
async def teams_bot(
    monkeypatch: pytest.MonkeyPatch,
    script: Sequence[ScriptEntry] = (),
    *,
    hooks: Sequence[LifecycleHook] = (),
    latency: float = 0.0,
    state: State | None = None,
    turn_queue: TurnQueue | None = None,
    seed: Seed | None = None,
    agent_factory: AgentFactory | None = None,
    shared_files: SharedFiles | None = None,
    **settings: Any,
) -> AsyncIterator[TeamsHarness]:
    """The bot on its own fake connector. ``state`` shares its stores (Redis in some tests);
    ``seed(fake)`` runs before the bot starts (e.g. to leave a turn a dead process held)."""
    async with FakeBotConnector() as fake:
        monkeypatch.setenv("IDENTITY_ENDPOINT", fake.managed_identity_endpoint)
        monkeypatch.setenv("IDENTITY_HEADER", fake.identity_header)
        # botbuilder keeps managed-identity tokens in a process-wide msal cache: start empty
        # so each bot fetches its token from its own fake.
        monkeypatch.setattr(ManagedIdentityAppCredentials, "global_token_cache", msal.TokenCache())
        add_members(fake)
        if seed is not None:
            await seed(fake)
        bot_settings = settings_for(fake, **settings)
        pool = ConnectorPool()
        resolver = user_resolver(bot_settings, pool, state.cache if state else None)
        agent = (
            agent_factory(resolver, bot_settings)
            if agent_factory is not None
            else build_agent(script, resolver, latency=latency, hooks=hooks)
        )
        bot_state = state or build_state(StateSettings(ephemeral=True))
        if turn_queue is not None:
            bot_state = dataclasses.replace(bot_state, turns=turn_queue)
        host = TeamsBot(
            agent,
            bot_settings,
            state=bot_state,
            pool=pool,
            files=shared_files,
            # the fake's upload URL is plain http on 127.0.0.1; production requires https
            file_offers=FileOffers(bot_state.cache, policy=FetchPolicy.local_fakes()),
        )
        await host.open()
        try:
            async with TestClient(TestServer(build_web_app(host), host="127.0.0.1")) as http:
                yield TeamsHarness(fake, host, http, agent)
        finally:
            await host.close(timeout=0)


def add_members(fake: FakeBotConnector) -> None:
    for user, name in ((MEMBER, "Ana Lima"), (ADMIN, "Alex Admin"), ("aad-bo", "Bo")):
        fake.members[f"29:{user}"] = {
            "id": f"29:{user}",
            "name": name,
            "aadObjectId": user,
            "email": f"{user}@contoso.com",
            "userPrincipalName": f"{user}@contoso.com",
            "tenantId": payloads.TENANT,
            "userRole": "user",
        }
