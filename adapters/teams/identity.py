"""Who is asking in Teams: ``TeamsUserResolver``.

The user is ``teams:{tenant}:{aad_object_id}``, read from the signed activity's metadata (see
``adapters.teams.context``). Email / UPN come from the conversation roster (the Bot Connector's
``get_member``, what ``TeamsInfo.get_member`` calls). Groups come from configuration
(``GroupMapping``: Entra object ids, emails, Entra group ids and app roles mapped to
Threadline groups) and, when configured, from Microsoft Graph (``GraphDirectory``:
``checkMemberGroups`` and ``appRoleAssignments`` with an app-only token). Groups are granted,
never self-named: a group, role or Graph result counts only through the configured mapping,
by its id, never by a display name anyone could give a group; ``admin`` likewise. Users
nobody mapped get no groups: deny by default. Results are cached for ``ttl`` seconds in a
``KeyValueStore``.

Who belongs to the organisation is decided here, once (``membership``): the roster entry's
``tenantId`` (and the activity's ``from.tenantId`` when Teams sends one) is one of the
organisation's tenants (``GroupMapping.tenants``: the app's tenant and ``allowed_tenants``;
never "any tenant"), and the roster's ``userRole`` is not ``guest`` or ``anonymous``. A
person of another tenant is ``external`` (``agent_core.users.EXTERNAL_GROUP``: only
``external_groups``), a guest ``guest`` (no default groups; their own mapping by object id
or email still counts, as Slack's guests keep what ``group_map`` grants), a meeting's
anonymous attendee ``anonymous`` (nothing at all). A roster that fails or times out means
external until known, and that answer is not cached.

>>> import asyncio
>>> from agent_core.users import RequestContext
>>> resolver = TeamsUserResolver(GroupMapping(users={"aad-1": ["admin"]}, tenants=["t1"]))
>>> context = RequestContext(metadata={"platform": "teams", "workspace_id": "t1",
...                                    "user_id": "aad-1", "teams_aad_object_id": "aad-1"})
>>> user = asyncio.run(resolver.resolve_user(context))  # no roster: external until known
>>> (user.id, user.group_memberships, user.metadata["workspace_id"])
('teams:t1:aad-1', ['external'], 't1')
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Protocol, Self

from pydantic import BaseModel, Field, field_validator

from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.places import TeamsPlaces, place_of
from agent_core.errors import AgentError
from agent_core.state import KeyValueStore, MemoryKeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.users import (
    ANONYMOUS_GROUP,
    EXTERNAL_GROUP,
    RequestContext,
    User,
    UserResolver,
)

logger = logging.getLogger(__name__)

GUEST_GROUP = "guest"
"""A guest of the tenant (roster ``userRole: guest``), as Slack's guests are ``guest``."""


class GroupMapping(BaseModel):
    """Configured group memberships. Keys are matched case-insensitively.

    ``default_groups`` go to every member of the organisation (a person of one of
    ``tenants``, not a guest) and are empty by default: unknown users get nothing. Empty
    ``tenants`` means nobody is a member (``TeamsSettings`` refuses default groups then).

    >>> GroupMapping(emails={"Ana@Contoso.com": ["admin"]}).groups_for("x", "ana@contoso.com")
    ['admin']
    """

    users: dict[str, list[str]] = Field(default_factory=dict)
    """Entra (AAD) object id -> groups."""
    emails: dict[str, list[str]] = Field(default_factory=dict)
    """Email or UPN -> groups."""
    aad_groups: dict[str, list[str]] = Field(default_factory=dict)
    """Entra group object id -> groups (checked through Graph ``checkMemberGroups``)."""
    app_roles: dict[str, list[str]] = Field(default_factory=dict)
    """App role id (of this app's service principal) -> groups (through Graph)."""
    default_groups: list[str] = Field(default_factory=list)
    tenants: list[str] = Field(default_factory=list)
    """The organisation's tenants (the app's and the allowed ones)."""
    external_groups: list[str] = Field(default_factory=list)
    """What people of other tenants get besides ``external``."""

    @field_validator("users", "emails", "aad_groups", "app_roles")
    @classmethod
    def _lower_keys(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        return {key.strip().lower(): groups for key, groups in value.items()}

    def allows_tenant(self, tenant_id: str) -> bool:
        """Whether ``tenant_id`` is one of the organisation's (never: any tenant).

        >>> GroupMapping(tenants=["T1"]).allows_tenant("t1"), GroupMapping().allows_tenant("t1")
        (True, False)
        """
        return bool(tenant_id) and tenant_id.lower() in {t.lower() for t in self.tenants}

    def groups_for(
        self,
        aad_object_id: str,
        email: str | None = None,
        *,
        aad_groups: Iterable[str] = (),
        app_roles: Iterable[str] = (),
        defaults: bool = True,
    ) -> list[str]:
        """Groups from the maps for one user: what Graph found (their Entra groups, their
        app roles) counts only through its own map, never by its name or the other map.

        >>> mapping = GroupMapping(aad_groups={"g-1": ["data"]}, app_roles={"r-1": ["ops"]})
        >>> mapping.groups_for("x", aad_groups=["g-1", "r-1"], app_roles=["g-1"])
        ['data']
        """
        groups = set(self.default_groups if defaults else ())
        groups.update(self.users.get(aad_object_id.lower(), []))
        if email:
            groups.update(self.emails.get(email.lower(), []))
        for group_id in aad_groups:
            groups.update(self.aad_groups.get(group_id.lower(), []))
        for role_id in app_roles:
            groups.update(self.app_roles.get(role_id.lower(), []))
        return sorted(groups)


Membership = Literal["member", "guest", "external", "anonymous"]


def membership(
    mapping: GroupMapping, member: Mapping[str, Any] | None, from_tenant: str | None
) -> Membership:
    """Where the person of a roster entry stands (None: the roster could not say, so
    external until known); ``from_tenant`` is the activity's ``from.tenantId``, if any.

    >>> mapping = GroupMapping(tenants=["t1"])
    >>> membership(mapping, {"tenantId": "t1", "userRole": "user"}, None)
    'member'
    >>> membership(mapping, {"tenantId": "t1", "userRole": "guest"}, None)
    'guest'
    >>> membership(mapping, {"tenantId": "t2"}, None), membership(mapping, None, "t1")
    ('external', 'external')
    >>> membership(mapping, {"tenantId": "t1"}, "t2")
    'external'
    >>> membership(mapping, {"tenantId": "t1", "userRole": "anonymous"}, None)
    'anonymous'
    """
    role = str((member or {}).get("userRole") or "").lower()
    if role == "anonymous":
        return "anonymous"
    tenant = str((member or {}).get("tenantId") or "")
    if not mapping.allows_tenant(tenant) or (from_tenant and from_tenant.lower() != tenant.lower()):
        return "external"
    return "guest" if role == "guest" else "member"


class Roster(Protocol):
    """The roster entry (``TeamsChannelAccount`` JSON) of the user who sent a request::

    member = await roster.member(request_context)  # {"email": ..., "userPrincipalName": ...}
    """

    async def member(self, request_context: RequestContext) -> Mapping[str, Any] | None: ...


class ConnectorRoster:
    """``Roster`` through the Bot Connector of the request's service URL (``get_member``).

    >>> import asyncio
    >>> from agent_core.users import RequestContext
    >>> asyncio.run(ConnectorRoster(lambda url: None).member(RequestContext())) is None
    True
    """

    def __init__(
        self, connector_for: Callable[[str], TeamsConnector], *, timeout: float = 10.0
    ) -> None:
        self._connector_for = connector_for
        self.timeout = timeout
        """Seconds a roster lookup may take; longer means unknown (external until known)."""

    async def member(self, request_context: RequestContext) -> Mapping[str, Any] | None:
        metadata = request_context.metadata
        service_url = metadata.get("teams_service_url")
        conversation_id = metadata.get("channel_id")
        member_id = metadata.get("teams_user_id") or metadata.get("user_id")
        if not (service_url and conversation_id and member_id):
            return None
        try:
            async with asyncio.timeout(self.timeout):
                connector = self._connector_for(service_url)
                return await connector.get_member(conversation_id, member_id)
        except (ConnectorError, TimeoutError) as error:
            logger.warning("roster lookup failed: %s", error or "timed out")
            return None


class Directory(Protocol):
    """Entra directory lookups (Microsoft Graph); ``GraphDirectory`` implements it::

    groups = await directory.member_groups(tenant_id, aad_object_id, ["g-1", "g-2"])
    """

    async def member_groups(
        self, tenant_id: str, aad_object_id: str, group_ids: list[str]
    ) -> list[str]:
        """Which of ``group_ids`` the user is a (transitive) member of."""
        ...

    async def app_roles(self, tenant_id: str, aad_object_id: str) -> list[str]:
        """The app role ids assigned to the user."""
        ...


class TeamsUserResolver(UserResolver):
    """Resolves the Teams user of a request; see the module docstring.

    >>> TeamsUserResolver(GroupMapping(default_groups=["user"])).mapping.default_groups
    ['user']
    """

    def __init__(
        self,
        mapping: GroupMapping,
        *,
        roster: Roster | None = None,
        directory: Directory | None = None,
        cache: KeyValueStore | None = None,
        ttl: float = 300.0,
        places: TeamsPlaces | None = None,
    ) -> None:
        self.mapping = mapping
        self.places = places
        """Told of each person of another organisation found in a conversation (the bot
        gives its own, so the next answer there knows the place is shared)."""
        self._roster = roster
        self._directory = directory
        self._cache = cache if cache is not None else MemoryKeyValueStore(max_entries=10_000)
        self._ttl = ttl

    def for_turn(self, writes: TurnWrites | None) -> Self:
        return turn_view(turn_view(self, writes, "_cache"), writes, "places")

    async def resolve_user(self, request_context: RequestContext) -> User:
        metadata = request_context.metadata
        tenant = str(metadata.get("workspace_id") or "")
        aad_id = str(metadata.get("teams_aad_object_id") or metadata.get("user_id") or "")
        if metadata.get("platform") != "teams" or not tenant or not aad_id:
            raise AgentError("This request does not identify a Teams user.")
        user_id = f"teams:{tenant}:{aad_id}"
        cached = await self._cache.get(f"identity:{user_id}")
        if isinstance(cached, dict):
            return User.model_validate(cached)
        member = await self._roster.member(request_context) if self._roster else None
        user = await self._lookup(request_context, user_id, tenant, aad_id, member)
        if member is not None:  # an unknown roster is external only until it answers
            await self._cache.set(
                f"identity:{user_id}", user.model_dump(mode="json"), ttl=self._ttl
            )
        return user

    async def _lookup(
        self,
        request_context: RequestContext,
        user_id: str,
        tenant: str,
        aad_id: str,
        found: Mapping[str, Any] | None,
    ) -> User:
        metadata = request_context.metadata
        member = found or {}
        email = member.get("email") or member.get("userPrincipalName")
        standing = membership(self.mapping, found, metadata.get("teams_from_tenant"))
        groups = await self._groups(standing, tenant, aad_id, email)
        if standing in ("external", "anonymous") and found is not None and self.places:
            if not metadata.get("is_dm"):  # someone of outside reads this conversation
                await self.places.note_outsider(tenant, place_of(metadata))
        return User(
            id=user_id,
            username=member.get("name") or metadata.get("user_name"),
            email=email,
            group_memberships=groups,
            metadata={
                "platform": "teams",
                "workspace_id": tenant,
                "aad_object_id": aad_id,
                "user_principal_name": member.get("userPrincipalName"),
                "teams_user_id": metadata.get("teams_user_id"),
                "organisation": str(member.get("tenantId") or "unknown"),
                "is_external": standing in ("external", "anonymous"),
                "teams_user_role": member.get("userRole"),
            },
        )

    async def _groups(
        self, standing: Membership, tenant: str, aad_id: str, email: str | None
    ) -> list[str]:
        """The groups of a person who stands ``standing`` (see ``membership``)."""
        match standing:
            case "anonymous":
                return [ANONYMOUS_GROUP]
            case "external":
                return list(dict.fromkeys([EXTERNAL_GROUP, *self.mapping.external_groups]))
            case "guest":  # their own mapping, never the members' defaults or Graph groups
                return sorted(
                    {GUEST_GROUP, *self.mapping.groups_for(aad_id, email, defaults=False)}
                )
        aad_groups, app_roles = await self._directory_ids(tenant, aad_id)
        return self.mapping.groups_for(aad_id, email, aad_groups=aad_groups, app_roles=app_roles)

    async def _directory_ids(self, tenant: str, aad_id: str) -> tuple[list[str], list[str]]:
        """The user's configured Entra groups and their app role ids, from Graph."""
        if self._directory is None:
            return [], []
        try:
            groups = (
                await self._directory.member_groups(tenant, aad_id, list(self.mapping.aad_groups))
                if self.mapping.aad_groups
                else []
            )
            roles = (
                await self._directory.app_roles(tenant, aad_id) if self.mapping.app_roles else []
            )
        except Exception as error:  # a directory outage must not grant or crash: no groups
            logger.warning("directory lookup for %s failed: %s", aad_id, error)
            return [], []
        return groups, roles


TokenProvider = Callable[[str], Awaitable[str]]
"""Returns an app-only Microsoft Graph token for a tenant id."""


class GraphDirectory:
    """``Directory`` on Microsoft Graph v1.0 with an app-only token (``GroupMember.Read.All``
    for groups; ``User.Read.All`` for app role assignments).

    ``service_principal_id`` limits app role assignments to this app's roles::

        directory = GraphDirectory(token_for_tenant, session=aiohttp_session)
    """

    def __init__(
        self,
        token_provider: TokenProvider,
        *,
        session: Any,
        base_url: str = "https://graph.microsoft.com/v1.0",
        service_principal_id: str | None = None,
    ) -> None:
        self._token = token_provider
        self._session = session
        self._base = base_url.rstrip("/")
        self._service_principal_id = service_principal_id

    async def _call(self, method: str, path: str, tenant_id: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {await self._token(tenant_id)}"}
        async with self._session.request(
            method, self._base + path, headers=headers, **kwargs
        ) as response:
            if response.status >= 400:
                text = await response.text()
                raise RuntimeError(f"Graph {method} {path}: {response.status} {text[:200]}")
            return await response.json()

    async def member_groups(
        self, tenant_id: str, aad_object_id: str, group_ids: list[str]
    ) -> list[str]:
        found: list[str] = []
        for start in range(0, len(group_ids), 20):  # Graph checks at most 20 ids per call
            result = await self._call(
                "POST",
                f"/users/{aad_object_id}/checkMemberGroups",
                tenant_id,
                json={"groupIds": group_ids[start : start + 20]},
            )
            found += [str(v) for v in result.get("value", [])]
        return found

    async def app_roles(self, tenant_id: str, aad_object_id: str) -> list[str]:
        result = await self._call("GET", f"/users/{aad_object_id}/appRoleAssignments", tenant_id)
        return [
            str(a.get("appRoleId"))
            for a in result.get("value", [])
            if self._service_principal_id in (None, a.get("resourceId"))
        ]
