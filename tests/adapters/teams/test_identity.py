"""adapters.teams.identity: roster email, configured groups, Graph groups, cache, deny by
default. The roster comes from the fake Bot Connector, Graph from a fake on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from adapters.teams.context import request_context
from adapters.teams.identity import (
    ConnectorRoster,
    GraphDirectory,
    GroupMapping,
    TeamsUserResolver,
)
from adapters.teams.testing import FakeBotConnector
from agent_core.errors import AgentError
from agent_core.state import MemoryKeyValueStore
from agent_core.users import RequestContext
from bots.teams.connector import ConnectorPool
from tests.adapters.teams.payloads import TENANT, message


class FakeGraph:
    """Microsoft Graph's checkMemberGroups and appRoleAssignments, recording calls."""

    def __init__(self) -> None:
        self.groups: dict[str, set[str]] = {}
        self.roles: dict[str, list[dict[str, str]]] = {}
        self.calls: list[tuple[str, str, Any]] = []
        self.fail = False

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1.0/users/{user}/checkMemberGroups", self._check)
        app.router.add_get("/v1.0/users/{user}/appRoleAssignments", self._roles)
        return app

    async def _check(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(("checkMemberGroups", request.headers["Authorization"], body))
        if self.fail:
            return web.json_response({"error": {"code": "ServiceUnavailable"}}, status=503)
        member_of = self.groups.get(request.match_info["user"], set())
        return web.json_response({"value": [g for g in body["groupIds"] if g in member_of]})

    async def _roles(self, request: web.Request) -> web.Response:
        self.calls.append(("appRoleAssignments", request.headers["Authorization"], None))
        return web.json_response({"value": self.roles.get(request.match_info["user"], [])})


@pytest.fixture
async def graph() -> AsyncIterator[tuple[FakeGraph, str]]:
    fake = FakeGraph()
    runner = web.AppRunner(fake.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield fake, f"http://127.0.0.1:{port}/v1.0"
    await runner.cleanup()


@pytest.fixture
async def connector() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as fake:
        fake.members["29:aad-ana"] = {
            "id": "29:aad-ana",
            "name": "Ana Lima",
            "aadObjectId": "aad-ana",
            "email": "Ana@Contoso.com",
            "userPrincipalName": "ana@contoso.com",
            "tenantId": TENANT,
            "userRole": "user",
        }
        yield fake


def context_for(fake: FakeBotConnector, user: str = "aad-ana") -> RequestContext:
    return request_context(message("hi", user=user, service_url=fake.url))


async def test_roster_email_and_configured_groups(connector: FakeBotConnector) -> None:
    async with ConnectorPool() as pool:
        resolver = TeamsUserResolver(
            GroupMapping(
                emails={"ana@contoso.com": ["analyst"]}, default_groups=["user"], tenants=[TENANT]
            ),
            roster=ConnectorRoster(pool.get),
        )
        user = await resolver.resolve_user(context_for(connector))
    assert user.id == f"teams:{TENANT}:aad-ana"
    assert (user.email, user.username) == ("Ana@Contoso.com", "Ana Lima")
    assert user.group_memberships == ["analyst", "user"]
    assert user.metadata["workspace_id"] == TENANT
    assert user.metadata["user_principal_name"] == "ana@contoso.com"


async def test_unknown_user_gets_no_groups(connector: FakeBotConnector) -> None:
    async with ConnectorPool() as pool:
        resolver = TeamsUserResolver(
            GroupMapping(users={"aad-admin": ["admin"]}), roster=ConnectorRoster(pool.get)
        )
        user = await resolver.resolve_user(context_for(connector, user="aad-stranger"))
    assert user.group_memberships == ["external"]  # not on the roster: external until known
    assert user.email is None  # the lookup failed softly


async def test_other_tenants_get_nothing_even_defaults(connector: FakeBotConnector) -> None:
    async with ConnectorPool() as pool:
        resolver = TeamsUserResolver(
            GroupMapping(default_groups=["user"], tenants=["other"], users={"aad-ana": ["admin"]}),
            roster=ConnectorRoster(pool.get),
        )
        user = await resolver.resolve_user(context_for(connector))
    assert user.group_memberships == ["external"]
    assert user.metadata["organisation"] == TENANT


async def test_results_are_cached_for_the_ttl(connector: FakeBotConnector) -> None:
    now = [0.0]
    cache = MemoryKeyValueStore(clock=lambda: now[0])
    async with ConnectorPool() as pool:
        resolver = TeamsUserResolver(
            GroupMapping(), roster=ConnectorRoster(pool.get), cache=cache, ttl=60
        )
        for _ in range(3):
            await resolver.resolve_user(context_for(connector))
        assert connector.operations() == ["get_conversation_member"]
        now[0] = 61
        await resolver.resolve_user(context_for(connector))
    assert connector.operations() == ["get_conversation_member"] * 2


async def test_graph_groups_and_app_roles(
    connector: FakeBotConnector, graph: tuple[FakeGraph, str]
) -> None:
    fake, url = graph
    fake.groups["aad-ana"] = {"g-admins"}
    fake.roles["aad-ana"] = [
        {"appRoleId": "role-analyst", "resourceId": "sp-1"},
        {"appRoleId": "role-other-app", "resourceId": "sp-2"},
    ]
    tokens: list[str] = []

    async def token(tenant: str) -> str:
        tokens.append(tenant)
        return "graph-token"

    mapping = GroupMapping(
        aad_groups={f"g{i}": ["x"] for i in range(25)} | {"g-admins": ["admin"]},
        app_roles={"role-analyst": ["analyst"], "role-other-app": ["nope"]},
        tenants=[TENANT],
    )
    async with aiohttp.ClientSession() as session, ConnectorPool() as pool:
        directory = GraphDirectory(
            token, session=session, base_url=url, service_principal_id="sp-1"
        )
        resolver = TeamsUserResolver(mapping, directory=directory, roster=ConnectorRoster(pool.get))
        user = await resolver.resolve_user(context_for(connector))
    assert user.group_memberships == ["admin", "analyst"]
    checks = [c for c in fake.calls if c[0] == "checkMemberGroups"]
    assert [len(c[2]["groupIds"]) for c in checks] == [20, 6]
    assert {c[1] for c in fake.calls} == {"Bearer graph-token"}
    assert set(tokens) == {TENANT}


async def test_graph_results_count_only_through_their_own_map(
    connector: FakeBotConnector, graph: tuple[FakeGraph, str]
) -> None:
    """An app role assigned to the user counts through ``app_roles`` only: its id listed
    under ``aad_groups`` (or named like a group) grants nothing."""
    fake, url = graph
    fake.roles["aad-ana"] = [{"appRoleId": "g-admins", "resourceId": "sp-1"}]

    async def token(tenant: str) -> str:
        return "t"

    mapping = GroupMapping(
        aad_groups={"g-admins": ["admin"]}, app_roles={"r-1": ["analyst"]}, tenants=[TENANT]
    )
    async with aiohttp.ClientSession() as session, ConnectorPool() as pool:
        directory = GraphDirectory(token, session=session, base_url=url)
        resolver = TeamsUserResolver(mapping, directory=directory, roster=ConnectorRoster(pool.get))
        user = await resolver.resolve_user(context_for(connector))
    assert user.group_memberships == []


async def test_graph_outage_grants_nothing(
    connector: FakeBotConnector, graph: tuple[FakeGraph, str]
) -> None:
    fake, url = graph
    fake.fail = True

    async def token(tenant: str) -> str:
        return "t"

    async with aiohttp.ClientSession() as session, ConnectorPool() as pool:
        resolver = TeamsUserResolver(
            GroupMapping(
                aad_groups={"g-admins": ["admin"]}, default_groups=["user"], tenants=[TENANT]
            ),
            directory=GraphDirectory(token, session=session, base_url=url),
            roster=ConnectorRoster(pool.get),
        )
        user = await resolver.resolve_user(context_for(connector))
    assert user.group_memberships == ["user"]


async def test_requests_without_a_teams_identity_are_refused() -> None:
    resolver = TeamsUserResolver(GroupMapping(default_groups=["user"]))
    with pytest.raises(AgentError):
        await resolver.resolve_user(RequestContext(metadata={"platform": "slack"}))
    with pytest.raises(AgentError):
        await resolver.resolve_user(
            RequestContext(metadata={"platform": "teams", "workspace_id": "t"})
        )
