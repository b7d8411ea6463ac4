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

>>> import asyncio
>>> from agent_core.users import RequestContext
>>> resolver = TeamsUserResolver(GroupMapping(users={"aad-1": ["admin"]}))
>>> context = RequestContext(metadata={"platform": "teams", "workspace_id": "t1",
...                                    "user_id": "aad-1", "teams_aad_object_id": "aad-1"})
>>> user = asyncio.run(resolver.resolve_user(context))
>>> (user.id, user.group_memberships, user.metadata["workspace_id"])
('teams:t1:aad-1', ['admin'], 't1')
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from pydantic import BaseModel, Field, field_validator

from adapters.teams.connector import ConnectorError, TeamsConnector
from agent_core.errors import AgentError
from agent_core.state import KeyValueStore, MemoryKeyValueStore
from agent_core.users import RequestContext, User, UserResolver

logger = logging.getLogger(__name__)


class GroupMapping(BaseModel):
    """Configured group memberships. Keys are matched case-insensitively.

    ``default_groups`` go to every user of an allowed tenant (``tenants``; empty = any
    tenant) and are empty by default: unknown users get nothing.

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

    @field_validator("users", "emails", "aad_groups", "app_roles")
    @classmethod
    def _lower_keys(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        return {key.strip().lower(): groups for key, groups in value.items()}

    def allows_tenant(self, tenant_id: str) -> bool:
        return not self.tenants or tenant_id.lower() in {t.lower() for t in self.tenants}

    def groups_for(
        self,
        aad_object_id: str,
        email: str | None = None,
        *,
        aad_groups: Iterable[str] = (),
        app_roles: Iterable[str] = (),
    ) -> list[str]:
        """Groups from the maps for one user: what Graph found (their Entra groups, their
        app roles) counts only through its own map, never by its name or the other map.

        >>> mapping = GroupMapping(aad_groups={"g-1": ["data"]}, app_roles={"r-1": ["ops"]})
        >>> mapping.groups_for("x", aad_groups=["g-1", "r-1"], app_roles=["g-1"])
        ['data']
        """
        groups = set(self.default_groups)
        groups.update(self.users.get(aad_object_id.lower(), []))
        if email:
            groups.update(self.emails.get(email.lower(), []))
        for group_id in aad_groups:
            groups.update(self.aad_groups.get(group_id.lower(), []))
        for role_id in app_roles:
            groups.update(self.app_roles.get(role_id.lower(), []))
        return sorted(groups)


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

    def __init__(self, connector_for: Callable[[str], TeamsConnector]) -> None:
        self._connector_for = connector_for

    async def member(self, request_context: RequestContext) -> Mapping[str, Any] | None:
        metadata = request_context.metadata
        service_url = metadata.get("teams_service_url")
        conversation_id = metadata.get("channel_id")
        member_id = metadata.get("teams_user_id") or metadata.get("user_id")
        if not (service_url and conversation_id and member_id):
            return None
        try:
            return await self._connector_for(service_url).get_member(conversation_id, member_id)
        except ConnectorError as error:
            logger.warning("roster lookup failed: %s", error)
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
    ) -> None:
        self.mapping = mapping
        self._roster = roster
        self._directory = directory
        self._cache = cache if cache is not None else MemoryKeyValueStore(max_entries=10_000)
        self._ttl = ttl

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
        user = await self._lookup(request_context, user_id, tenant, aad_id)
        await self._cache.set(f"identity:{user_id}", user.model_dump(mode="json"), ttl=self._ttl)
        return user

    async def _lookup(
        self, request_context: RequestContext, user_id: str, tenant: str, aad_id: str
    ) -> User:
        metadata = request_context.metadata
        member = await self._roster.member(request_context) if self._roster else None
        member = member or {}
        email = member.get("email") or member.get("userPrincipalName")
        groups: list[str] = []
        if self.mapping.allows_tenant(tenant):
            aad_groups, app_roles = await self._directory_ids(tenant, aad_id)
            groups = self.mapping.groups_for(
                aad_id, email, aad_groups=aad_groups, app_roles=app_roles
            )
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
            },
        )

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
