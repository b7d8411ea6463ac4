"""``SlackUserResolver``: who is asking, and in which groups, from the workspace itself.

The user id comes from the signed payload (``RequestContext.metadata``), never from text.
Name and email come from ``users.info``. Groups are *granted*, never self-named: a Slack
user group counts only through configuration, by its id (``group_map``:
``{"S0123": ["finance"]}``; ``admin_groups``: user-group ids whose members are ``admin``),
because anyone allowed to create or rename a user group could otherwise take a handle such
as ``admin`` or ``finance``. Membership is read from ``usergroups.list`` /
``usergroups.users.list`` (only when a setting names a user group); handles are never read.
``admin`` comes only from ``admin_users``, ``admin_groups``, ``group_map`` and, when
``workspace_admins_are_admins`` says so, workspace admins/owners. Every member gets
``user``; guests (single- and multi-channel) get ``guest`` instead.

Who belongs to the organisation is decided here, once (``is_member_of_install``): the
person's own team (``users.info`` ``team_id``, and the event's ``user_team`` when it has
one) is the installing workspace (the bot token's own, from ``auth.test``), or on
Enterprise Grid their ``enterprise_user.enterprise_id`` is the install's enterprise (people
of another workspace of the same Grid organisation belong). Anyone else is ``external``
(``agent_core.users.EXTERNAL_GROUP``) and gets only what ``external_groups`` grants; a
missing or failed signal (``users.info`` failing, ``auth.test`` failing, a Grid user
without ``enterprise_user``, an event of a shared channel without ``user_team``) means
external until known, never member. The person's organisation is kept in
``User.metadata["organisation"]`` for the audit log.

Lookups are cached with a TTL and invalidated by ``user_change``,
``subteam_members_changed`` and ``subteam_updated``. With ``local_ttl`` set, lookups are
also kept in this process for that long in front of a shared (Redis) cache, so a turn costs
no cache round trip; another process's invalidation reaches this one within ``local_ttl``.
A missing scope or a free plan without user groups logs once and yields fewer groups; it
never fails the turn (the failed lookup is cached for ``failure_ttl`` so every turn does not
repeat it).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Self

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import user_key
from adapters.slack.errors import SLACK_FAILURES, slack_failure
from agent_core.errors import AgentError
from agent_core.state import KeyValueStore, MemoryKeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.users import EXTERNAL_GROUP, RequestContext, User, UserResolver

log = logging.getLogger(__name__)

ClientProvider = Callable[[str, str | None], Awaitable[AsyncWebClient]]
"""``(team_id, enterprise_id) -> client`` holding that workspace's bot token."""
HomeProvider = Callable[[str, str | None], Awaitable[tuple[str, str | None] | None]]
"""``(team_id, enterprise_id) -> (team_id, enterprise_id)`` of the installation serving a
workspace (None: unknown); without one, the resolver asks ``auth.test`` of the token."""

MEMBER_GROUP = "user"
GUEST_GROUP = "guest"
ADMIN_GROUP = "admin"
INVALIDATING_EVENTS = frozenset({"user_change", "subteam_members_changed", "subteam_updated"})


def fixed_client(client: AsyncWebClient) -> ClientProvider:
    """A provider that always returns ``client`` (single-workspace apps)."""

    async def provide(team_id: str, enterprise_id: str | None) -> AsyncWebClient:
        return client

    return provide


def _groups_key(team: str) -> str:
    """Cache key of a workspace's user-group members by id (renamed from the handle-keyed
    ``slack:identity:groups:``, so no process reads an entry written by an older one)."""
    return f"slack:identity:usergroups:{team}"


def _profile(user: Mapping[str, Any]) -> dict[str, Any]:
    profile: Mapping[str, Any] = user.get("profile") or {}
    return {
        "name": profile.get("display_name")
        or profile.get("real_name")
        or user.get("real_name")
        or user.get("name"),
        "email": profile.get("email"),
        "is_admin": bool(user.get("is_admin")),
        "is_owner": bool(user.get("is_owner") or user.get("is_primary_owner")),
        "is_guest": bool(
            user.get("is_restricted") or user.get("is_ultra_restricted") or user.get("is_stranger")
        ),
        "team_id": user.get("team_id"),
        "enterprise_id": (user.get("enterprise_user") or {}).get("enterprise_id"),
        "known": True,
    }


def is_member_of_install(
    profile: Mapping[str, Any],
    home: tuple[str, str | None] | None,
    *,
    event_team: str | None = None,
    event_must_say: bool = False,
) -> bool:
    """Whether the person of ``profile`` (their ``users.info``) belongs to the installing
    workspace ``home`` (``(team_id, enterprise_id)`` of the bot token; None: unknown).
    ``event_team`` is the event's ``user_team``; ``event_must_say``: the event came from a
    channel shared with another organisation, where only an event naming the person's team
    is believed. Fails closed: anything unknown is not a member.

    >>> ana = {"known": True, "team_id": "T1"}
    >>> is_member_of_install(ana, ("T1", None)), is_member_of_install(ana, None)
    (True, False)
    >>> grid = {"known": True, "team_id": "T2", "enterprise_id": "E1"}
    >>> is_member_of_install(grid, ("T1", "E1")), is_member_of_install(grid, ("T1", None))
    (True, False)
    >>> is_member_of_install(ana, ("T1", None), event_team="T9")
    False
    >>> is_member_of_install(ana, ("T1", None), event_must_say=True)
    False
    """
    if home is None or not profile.get("known"):
        return False
    home_team, home_enterprise = home
    same_grid = bool(home_enterprise) and profile.get("enterprise_id") == home_enterprise
    if profile.get("team_id") != home_team and not same_grid:
        return False
    if event_team is None:
        return not event_must_say
    return event_team == home_team or same_grid


USERGROUP_ID = re.compile(r"^S[A-Z0-9]+$")
"""A Slack user-group id (``S0123ABCD``); a handle (``data-team``, ``@ops``) never matches."""


def usergroup_ids(values: Iterable[str], setting: str) -> list[str]:
    """``values`` checked to be user-group ids; a handle raises ``ValueError`` saying how to
    migrate (a handle can be taken by anyone who may edit user groups).

    >>> usergroup_ids(["S0123ABCD"], "admin_groups")
    ['S0123ABCD']
    >>> usergroup_ids(["@data-team"], "admin_groups")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: admin_groups names user groups by handle (@data-team): groups are granted ...
    """
    ids = [value.strip() for value in values if value.strip()]
    handles = [value for value in ids if not USERGROUP_ID.match(value)]
    if handles:
        raise ValueError(
            f"{setting} names user groups by handle ({', '.join(handles[:5])}): groups are "
            "granted by user-group id only (S0123ABCD: usergroups.list, or the group's page "
            'in Slack); see the README, "Groups and admins"'
        )
    return ids


class SlackUserResolver(UserResolver):
    """Resolves Slack users to ``User(id="slack:{team}:{user}")`` with the groups
    configuration grants them; see the module docstring.

    >>> client = AsyncWebClient(token="xoxb-test")
    >>> resolver = SlackUserResolver(client, admin_users=["U1"], admin_groups=["S0OPS"],
    ...                              group_map={"S0FIN": ["finance"]})
    >>> resolver.ttl, resolver.group_map["S0FIN"]
    (300.0, ('finance',))
    """

    def __init__(
        self,
        client: AsyncWebClient | ClientProvider,
        *,
        home: HomeProvider | None = None,
        admin_users: Iterable[str] = (),
        admin_groups: Iterable[str] = (),
        group_map: Mapping[str, Iterable[str]] | None = None,
        workspace_admins_are_admins: bool = False,
        external_groups: Iterable[str] = (),
        cache: KeyValueStore | None = None,
        ttl: float = 300.0,
        failure_ttl: float = 60.0,
        local_ttl: float = 0.0,
    ) -> None:
        self._client_for = fixed_client(client) if isinstance(client, AsyncWebClient) else client
        self.admin_users = frozenset(admin_users)
        self.admin_groups = frozenset(usergroup_ids(admin_groups, "admin_groups"))
        mapped = dict(group_map or {})
        self.group_map = {
            group_id: tuple(mapped[group_id]) for group_id in usergroup_ids(mapped, "group_map")
        }
        self.workspace_admins_are_admins = workspace_admins_are_admins
        self.external_groups = tuple(external_groups)
        """What configuration grants people of other organisations (besides ``external``)."""
        self._home_of = home
        self._homes: dict[str, tuple[str, str | None]] = {}
        self._cache = cache if cache is not None else MemoryKeyValueStore(max_entries=50_000)
        self.ttl = float(ttl)
        self.failure_ttl = min(self.ttl, float(failure_ttl))
        self.local_ttl = min(self.failure_ttl, float(local_ttl))
        self._local = MemoryKeyValueStore(max_entries=10_000) if self.local_ttl > 0 else None
        self._warned: set[tuple[str, str]] = set()
        self._loading: dict[str, asyncio.Future[Any]] = {}

    def for_turn(self, writes: TurnWrites | None) -> Self:
        return turn_view(self, writes, "_cache")

    @property
    def reads_user_groups(self) -> bool:
        """Whether any configuration names a user group (else memberships are never read)."""
        return bool(self.admin_groups or self.group_map)

    async def resolve_user(self, request_context: RequestContext) -> User:
        meta = request_context.metadata
        team, user_id = meta.get("workspace_id"), meta.get("user_id")
        if meta.get("platform") != "slack" or not team or not user_id:
            raise AgentError("This request did not come from a verified Slack user.")
        enterprise = meta.get("slack_enterprise_id")
        client = await self._client_for(team, enterprise)
        profile = await self._user_profile(client, team, user_id)
        member = is_member_of_install(
            profile,
            await self._home(client, team, enterprise),
            event_team=meta.get("slack_user_team"),
            event_must_say=bool(meta.get("slack_ext_shared")),
        )
        if member:
            usergroups = await self._usergroups_of(client, team, user_id)
            groups = self.groups(user_id, profile, usergroups)
        else:
            groups = list(dict.fromkeys([EXTERNAL_GROUP, *self.external_groups]))
        organisation = meta.get("slack_user_team") or profile.get("team_id") or "unknown"
        return User(
            id=user_key(team, user_id, enterprise),  # a Grid org's person: one id
            username=profile.get("name") or meta.get("user_name"),
            email=profile.get("email"),
            metadata={
                "platform": "slack",
                "workspace_id": team,
                "slack_enterprise_id": enterprise,
                "slack_user_id": user_id,
                "is_workspace_admin": profile.get("is_admin", False),
                "is_workspace_owner": profile.get("is_owner", False),
                "organisation": organisation,
                "is_external": not member,
            },
            group_memberships=groups,
        )

    def groups(
        self, user_id: str, profile: Mapping[str, Any], usergroups: Iterable[str]
    ) -> list[str]:
        """The Threadline groups of a user: ``user`` (or ``guest``), what ``group_map``
        grants their user groups (by id), and ``admin`` only from configuration.

        >>> resolver = SlackUserResolver(AsyncWebClient(token="x"), group_map={"S1A": ["fin"]})
        >>> resolver.groups("U1", {}, ["S1A", "S2B"])
        ['user', 'fin']
        """
        ids = frozenset(usergroups)
        groups = [GUEST_GROUP if profile.get("is_guest") else MEMBER_GROUP]
        for group_id in sorted(ids & self.group_map.keys()):
            groups.extend(self.group_map[group_id])
        workspace_admin = profile.get("is_admin") or profile.get("is_owner")
        if (
            user_id in self.admin_users
            or not self.admin_groups.isdisjoint(ids)
            or (self.workspace_admins_are_admins and workspace_admin)
        ):
            groups.append(ADMIN_GROUP)
        return list(dict.fromkeys(groups))

    # --- lookups ------------------------------------------------------------------------------

    def _degrade(self, team: str, what: str, error: BaseException) -> None:
        reason = slack_failure(error)
        level = logging.WARNING if (team, what) not in self._warned else logging.DEBUG
        self._warned.add((team, what))
        log.log(
            level,
            "slack identity: %s unavailable in workspace %s (%s); continuing with fewer "
            "details. Add the scope (users:read, users:read.email, usergroups:read) or "
            "ignore this on a free plan.",
            what,
            team,
            reason,
        )

    async def _once(self, key: str, load: Callable[[], Awaitable[Any]]) -> Any:
        """``cache[key]``, else ``load()`` - shared by concurrent callers (a burst of turns
        after a restart makes one ``users.info`` call per user, not one per turn)."""
        if self._local is not None and (kept := await self._local.get(key)) is not None:
            return kept
        cached = await self._cache.get(key)
        if cached is None:
            pending = self._loading.get(key)
            if pending is None:
                pending = self._loading[key] = asyncio.ensure_future(load())
                pending.add_done_callback(lambda _: self._loading.pop(key, None))
            cached = await asyncio.shield(pending)
        if self._local is not None:
            await self._local.set(key, cached, ttl=self.local_ttl)
        return cached

    async def _home(
        self, client: AsyncWebClient, team: str, enterprise: str | None
    ) -> tuple[str, str | None] | None:
        """``(team_id, enterprise_id)`` of the installing workspace: the ``home`` provider's,
        else the bot token's ``auth.test`` once per token; None while unknown (fail closed)."""
        if self._home_of is not None:
            return await self._home_of(team, enterprise)
        token = client.token or ""
        if token in self._homes:
            return self._homes[token]
        try:
            found = await client.auth_test()
        except SLACK_FAILURES as error:
            self._degrade("(this token)", "auth.test", error)
            return None
        home_team, home_enterprise = found.get("team_id"), found.get("enterprise_id")
        if not home_team:
            return None
        home = (str(home_team), str(home_enterprise) if home_enterprise else None)
        self._homes[token] = home
        return home

    async def _user_profile(
        self, client: AsyncWebClient, team: str, user_id: str
    ) -> dict[str, Any]:
        key = f"slack:identity:user:{team}:{user_id}"
        return dict(await self._once(key, lambda: self._load_profile(client, team, key, user_id)))

    async def _load_profile(
        self, client: AsyncWebClient, team: str, key: str, user_id: str
    ) -> dict[str, Any]:
        try:
            response = await client.users_info(user=user_id)
        except SLACK_FAILURES as error:
            self._degrade(team, "users.info", error)
            await self._cache.set(key, {}, ttl=self.failure_ttl)
            return {}
        profile = _profile(response.get("user") or {})
        await self._cache.set(key, profile, ttl=self.ttl)
        return profile

    async def _usergroups_of(self, client: AsyncWebClient, team: str, user_id: str) -> list[str]:
        """The ids of the user groups ``user_id`` belongs to (none read when no setting names
        a user group: the lookup would grant nothing)."""
        if not self.reads_user_groups:
            return []
        members = await self._group_members(client, team)
        return sorted(group_id for group_id, users in members.items() if user_id in users)

    async def _group_members(self, client: AsyncWebClient, team: str) -> dict[str, list[str]]:
        key = _groups_key(team)
        return dict(await self._once(key, lambda: self._load_groups(client, team, key)))

    async def _load_groups(
        self, client: AsyncWebClient, team: str, key: str
    ) -> dict[str, list[str]]:
        try:
            members = await self._fetch_group_members(client)
        except SLACK_FAILURES as error:
            self._degrade(team, "user groups", error)
            await self._cache.set(key, {}, ttl=self.failure_ttl)
            return {}
        await self._cache.set(key, members, ttl=self.ttl)
        return members

    async def _fetch_group_members(self, client: AsyncWebClient) -> dict[str, list[str]]:
        """Members of each configured user group, by id (other groups are not kept)."""
        response = await client.usergroups_list(include_users=True)
        wanted = self.admin_groups | self.group_map.keys()
        members: dict[str, list[str]] = {}
        for group in response.get("usergroups") or []:
            group_id = group.get("id")
            if group_id not in wanted or group.get("date_delete"):
                continue
            users = group.get("users")
            if users is None:
                listed = await client.usergroups_users_list(usergroup=group_id)
                users = listed.get("users") or []
            members[str(group_id)] = list(users)
        return members

    # --- invalidation -------------------------------------------------------------------------

    async def _forget(self, key: str) -> None:
        if self._local is not None:
            await self._local.delete(key)
        await self._cache.delete(key)

    async def invalidate_user(self, team: str, user_id: str) -> None:
        await self._forget(f"slack:identity:user:{team}:{user_id}")

    async def invalidate_groups(self, team: str) -> None:
        await self._forget(_groups_key(team))

    async def handle_event(self, team: str, event: Mapping[str, Any]) -> None:
        """Drop cached identity an event made stale (``user_change`` / ``subteam_*``)."""
        kind = event.get("type")
        if kind == "user_change":
            user: Mapping[str, Any] = event.get("user") or {}
            if user.get("id"):
                await self.invalidate_user(team, str(user["id"]))
        elif kind in ("subteam_members_changed", "subteam_updated"):
            await self.invalidate_groups(team)
