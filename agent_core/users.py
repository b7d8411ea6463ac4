"""Who is asking: ``User``, the ``RequestContext`` a channel builds, and ``UserResolver``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_core.channel import ChannelMetadata

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites

EXTERNAL_GROUP = "external"
"""People of another organisation (another Slack workspace outside the Grid, another
Entra tenant): granted nothing unless configuration says so (``external_groups``)."""
ANONYMOUS_GROUP = "anonymous"
"""A Teams meeting's anonymous attendee: never granted anything."""
OUTSIDER_REFUSAL = (
    "Sorry, I only answer people of this organisation here; ask someone there to grant "
    "people from outside access."
)
"""The one sentence an outsider granted nothing is told, in the thread (both channels)."""


class User(BaseModel):
    """An authenticated user; ``group_memberships`` drive every permission check.

    >>> User(id="slack:T1:U1", group_memberships=["user"]).is_member_of(["admin", "user"])
    True
    """

    model_config = ConfigDict(defer_build=True, extra="allow")

    id: str
    username: str | None = None
    email: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    group_memberships: list[str] = Field(default_factory=list)

    def is_member_of(self, groups: list[str] | tuple[str, ...] | frozenset[str]) -> bool:
        """True when ``groups`` is empty (open to everyone) or shares a group with the user."""
        return not groups or not set(groups).isdisjoint(self.group_memberships)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.group_memberships

    @property
    def is_outsider(self) -> bool:
        """Of another organisation, or anonymous (``external`` / ``anonymous``)."""
        return not {EXTERNAL_GROUP, ANONYMOUS_GROUP}.isdisjoint(self.group_memberships)

    @property
    def granted_nothing(self) -> bool:
        """An outsider whom configuration granted nothing: nothing runs for them (no tools,
        approvals, schedules or memories); an anonymous attendee always.

        >>> User(id="x", group_memberships=["external"]).granted_nothing
        True
        >>> User(id="x", group_memberships=["external", "partners"]).granted_nothing
        False
        """
        groups = set(self.group_memberships)
        return ANONYMOUS_GROUP in groups or (
            EXTERNAL_GROUP in groups and groups <= {EXTERNAL_GROUP}
        )


class RequestContext(BaseModel):
    """What a channel knows about a request, handed to the ``UserResolver``.

    Channels put their verified identity in ``metadata`` (platform, workspace, user, channel,
    thread, is_dm); HTTP front ends may also pass headers and cookies.

    >>> RequestContext(headers={"X-User": "ana"}).get_header("x-user")
    'ana'
    """

    model_config = ConfigDict(defer_build=True)

    cookies: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    remote_addr: str | None = None
    query_params: dict[str, str] = Field(default_factory=dict)
    metadata: ChannelMetadata = Field(default_factory=lambda: ChannelMetadata())

    def get_cookie(self, name: str, default: str | None = None) -> str | None:
        return self.cookies.get(name, default)

    def get_header(self, name: str, default: str | None = None) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), default)


class UserResolver(ABC):
    """Turns a ``RequestContext`` into a ``User``; raise ``AgentError`` to refuse the request.

    >>> class Fixed(UserResolver):
    ...     async def resolve_user(self, request_context):
    ...         return User(id="u1", group_memberships=["user"])
    """

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This resolver as the running turn whose writes are ``writes`` uses it: one whose
        cache is ``KeyValueStore.for_turn(writes)``; itself when it keeps none."""
        return self

    @abstractmethod
    async def resolve_user(self, request_context: RequestContext) -> User: ...


class StaticUserResolver(UserResolver):
    """Resolves every request to one user: for tests, demos and single-user tools.

    >>> import asyncio
    >>> asyncio.run(StaticUserResolver(User(id="me")).resolve_user(RequestContext())).id
    'me'
    """

    def __init__(self, user: User) -> None:
        self._user = user

    async def resolve_user(self, request_context: RequestContext) -> User:
        return self._user
