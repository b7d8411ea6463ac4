"""SlackUserResolver against the fake Slack Web API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.identity import SlackUserResolver
from adapters.slack.testing import FakeSlackApi
from agent_core.errors import AgentError
from agent_core.state import MemoryKeyValueStore
from agent_core.users import RequestContext


def ctx(user: str = "U1", team: str = "T1", **extra: object) -> RequestContext:
    return RequestContext(
        metadata={"platform": "slack", "workspace_id": team, "user_id": user, **extra}
    )


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {
            "id": "U1",
            "name": "ana",
            "team_id": "T1",
            "profile": {"email": "ana@acme.io", "display_name": "Ana", "real_name": "Ana B"},
        }
        fake.users["U2"] = {
            "id": "U2",
            "name": "bo",
            "team_id": "T1",
            "is_admin": True,
            "profile": {},
        }
        fake.users["G1"] = {
            "id": "G1",
            "name": "guest",
            "team_id": "T1",
            "is_restricted": True,
            "profile": {},
        }
        fake.usergroups = [
            {"id": "S1", "handle": "data-team", "users": ["U1", "U2"]},
            {"id": "S2", "handle": "ops", "users": ["U2"]},
            {"id": "S3", "handle": "gone", "users": ["U1"], "date_delete": 1},
        ]
        yield fake


def client(fake: FakeSlackApi, token: str = "xoxb-1") -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=fake.base_url)


GROUP_MAP = {"S1": ["data"], "S3": ["gone"], "S9": ["new"]}


def resolver_for(fake: FakeSlackApi, **options: object) -> SlackUserResolver:
    return SlackUserResolver(client(fake), group_map=GROUP_MAP, **options)  # type: ignore[arg-type]


async def test_member_gets_profile_user_group_and_mapped_groups(fake: FakeSlackApi) -> None:
    user = await resolver_for(fake).resolve_user(ctx("U1", slack_enterprise_id="E1"))
    assert user.id == "slack:E1:U1"  # one person of the Grid organisation (issue 38)
    assert (user.username, user.email) == ("Ana", "ana@acme.io")
    assert user.group_memberships == ["user", "data"]  # S3 was deleted: it grants nothing
    assert user.metadata["workspace_id"] == "T1"
    assert user.metadata["slack_enterprise_id"] == "E1"
    assert not user.is_admin


async def test_a_user_group_handle_grants_nothing(fake: FakeSlackApi) -> None:
    """Regression (issue 22, item 1): every user-group handle became a Threadline group, so
    a member of a user group whose handle is ``admin`` was an admin, and ``@finance`` got
    whatever was granted to ``finance``."""
    fake.usergroups = [
        {"id": "S7", "handle": "admin", "name": "admin", "users": ["U1"]},
        {"id": "S8", "handle": "finance", "name": "finance", "users": ["U1"]},
    ]
    for resolver in (SlackUserResolver(client(fake)), resolver_for(fake)):
        user = await resolver.resolve_user(ctx("U1"))
        assert user.group_memberships == ["user"]
        assert not user.is_admin


async def test_groups_are_granted_by_user_group_id_only(fake: FakeSlackApi) -> None:
    fake.usergroups = [{"id": "S7", "handle": "notifications", "users": ["U1"]}]
    resolver = SlackUserResolver(client(fake), group_map={"S7": ["finance", "admin"]})
    user = await resolver.resolve_user(ctx("U1"))
    assert user.group_memberships == ["user", "finance", "admin"]


async def test_no_group_setting_reads_no_user_groups(fake: FakeSlackApi) -> None:
    await SlackUserResolver(client(fake), admin_users=["U1"]).resolve_user(ctx("U1"))
    assert fake.methods() == ["users.info"]


@pytest.mark.parametrize("handle", ["ops", "@ops", "data-team", "s0123"])
def test_a_handle_in_the_settings_is_refused_with_the_way_out(handle: str) -> None:
    with pytest.raises(ValueError, match="by user-group id only"):
        SlackUserResolver(AsyncWebClient(token="x"), admin_groups=[handle])
    with pytest.raises(ValueError, match="group_map names user groups by handle"):
        SlackUserResolver(AsyncWebClient(token="x"), group_map={handle: ["finance"]})


@pytest.mark.parametrize(
    ("options", "user_id", "is_admin"),
    [
        ({"admin_users": ["U1"]}, "U1", True),
        ({"admin_groups": ["S2"]}, "U2", True),
        ({"admin_groups": ["S2"]}, "U1", False),
        ({"workspace_admins_are_admins": True}, "U2", True),
        ({}, "U2", False),
    ],
)
async def test_admin_comes_from_configured_users_groups_or_workspace_role(
    fake: FakeSlackApi, options: dict[str, object], user_id: str, is_admin: bool
) -> None:
    resolver = SlackUserResolver(client(fake), **options)  # type: ignore[arg-type]
    user = await resolver.resolve_user(ctx(user_id))
    assert user.is_admin is is_admin
    assert "user" in user.group_memberships


async def test_guests_get_the_guest_group_not_user(fake: FakeSlackApi) -> None:
    user = await SlackUserResolver(client(fake)).resolve_user(ctx("G1"))
    assert user.group_memberships == ["guest"]


async def test_lookups_are_cached_until_the_ttl_expires(fake: FakeSlackApi) -> None:
    """Regression: an empty injected cache (len 0, so falsy) was replaced by a default one."""
    now = [0.0]
    cache = MemoryKeyValueStore(clock=lambda: now[0])
    resolver = resolver_for(fake, cache=cache, ttl=60)
    await resolver.resolve_user(ctx("U1"))
    await resolver.resolve_user(ctx("U2"))
    assert fake.methods() == ["users.info", "usergroups.list", "users.info"]
    now[0] = 61.0
    await resolver.resolve_user(ctx("U1"))
    assert fake.methods()[3:] == ["users.info", "usergroups.list"]


async def test_events_invalidate_the_cache(fake: FakeSlackApi) -> None:
    resolver = resolver_for(fake)
    assert (await resolver.resolve_user(ctx("U1"))).group_memberships == ["user", "data"]
    fake.usergroups.append({"id": "S9", "handle": "new", "users": ["U1"]})
    fake.users["U1"]["profile"]["display_name"] = "Ana Renamed"
    assert (await resolver.resolve_user(ctx("U1"))).username == "Ana"
    await resolver.handle_event("T1", {"type": "subteam_members_changed", "subteam_id": "S9"})
    await resolver.handle_event("T1", {"type": "user_change", "user": {"id": "U1"}})
    user = await resolver.resolve_user(ctx("U1"))
    assert user.group_memberships == ["user", "data", "new"]
    assert user.username == "Ana Renamed"
    await resolver.handle_event("T1", {"type": "subteam_updated"})
    await resolver.resolve_user(ctx("U1"))
    assert fake.methods().count("usergroups.list") == 3


async def test_groups_without_inline_users_are_listed_one_by_one(fake: FakeSlackApi) -> None:
    fake.usergroups = [{"id": "S1", "handle": "data-team"}]
    original = fake._usergroups_list

    async def without_users(call):  # type: ignore[no-untyped-def]
        result = await original(call)
        for group in result["usergroups"]:
            group.pop("users", None)
        return result

    fake._usergroups_list = without_users  # type: ignore[method-assign]
    fake.usergroups[0]["users"] = ["U1"]
    user = await resolver_for(fake).resolve_user(ctx("U1"))
    assert user.group_memberships == ["user", "data"]
    assert "usergroups.users.list" in fake.methods()


@pytest.mark.parametrize("error", ["missing_scope", "paid_teams_only", "not_allowed_token_type"])
async def test_missing_scopes_or_free_plan_degrade_to_fewer_groups_with_one_log_line(
    fake: FakeSlackApi, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake.errors["usergroups.list"] = error
    resolver = resolver_for(fake, admin_users=["U1"])
    with caplog.at_level(logging.WARNING, logger="adapters.slack.identity"):
        first = await resolver.resolve_user(ctx("U1", user_name="ana"))
        await resolver.resolve_user(ctx("U2"))
    assert first.group_memberships == ["user", "admin"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    await resolver.resolve_user(ctx("U1"))
    assert fake.methods() == ["users.info", "usergroups.list", "users.info"]  # failures cached
    assert any(error in w and "user groups" in w for w in warnings)


async def test_a_failed_users_info_means_external_until_known(
    fake: FakeSlackApi, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 35 (bad input): with ``users.info`` failing, a person was a member (``user``)
    whatever their organisation; now they are external until it answers, with one log
    line, and the failure is cached only for ``failure_ttl``."""
    fake.errors["users.info"] = "missing_scope"
    resolver = resolver_for(fake, admin_users=["U1"])
    with caplog.at_level(logging.WARNING, logger="adapters.slack.identity"):
        first = await resolver.resolve_user(ctx("U1", user_name="ana"))
    assert first.group_memberships == ["external"]
    assert first.metadata["is_external"] and (first.username, first.email) == ("ana", None)
    assert sum("users.info" in r.getMessage() for r in caplog.records) == 1
    assert "usergroups.list" not in fake.methods()  # an outsider's groups are never read


async def test_non_slack_or_unsigned_context_is_refused(fake: FakeSlackApi) -> None:
    resolver = SlackUserResolver(client(fake))
    with pytest.raises(AgentError):
        await resolver.resolve_user(RequestContext(metadata={"platform": "teams", "user_id": "x"}))
    with pytest.raises(AgentError):
        await resolver.resolve_user(RequestContext(metadata={"platform": "slack"}))
    assert fake.calls == []


async def test_multi_workspace_provider_uses_each_workspace_token(fake: FakeSlackApi) -> None:
    tokens = {"T1": "xoxb-one", "T2": "xoxb-two"}

    async def provider(team: str, enterprise: str | None) -> AsyncWebClient:
        return client(fake, tokens[team])

    resolver = SlackUserResolver(provider)
    await resolver.resolve_user(ctx("U1", team="T1"))
    await resolver.resolve_user(ctx("U1", team="T2"))
    assert {c.token for c in fake.calls} == {"xoxb-one", "xoxb-two"}


async def test_a_burst_of_turns_makes_one_lookup_per_user(fake: FakeSlackApi) -> None:
    """Regression: concurrent turns after a restart each called users.info (thundering herd)."""
    import asyncio

    resolver = resolver_for(fake)
    users = await asyncio.gather(*(resolver.resolve_user(ctx("U1")) for _ in range(20)))
    assert {u.email for u in users} == {"ana@acme.io"}
    assert fake.methods() == ["users.info", "usergroups.list"]
