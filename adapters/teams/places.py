"""``TeamsPlaces``: whether a Teams conversation is read by another organisation.

Slack's twin (``adapters.slack.places``) asks Slack (``conversations.info``); Teams puts no
"shared with another organisation" flag on an activity or a conversation, so the bot reads
who is there. A conversation counts as shared when:

- the conversation's own tenant (``conversation.tenantId``) is not one of the
  organisation's (a shared channel another organisation hosts), or the sender's
  ``from.tenantId`` is another tenant: believed at once (Slack: the envelope's flag);
- else what is cached for the place, else its roster (``pagedmembers``, read on the first
  turn in the place): any member whose ``tenantId`` is not a home tenant, or who has none;
- ``conversationUpdate`` updates the cache at once (``handle_event``): ``membersAdded``
  naming another tenant marks it shared, any other change forgets it so the next turn reads
  the roster again (Slack: ``channel_shared`` / ``channel_unshared``);
- a person the identity resolver found to be of another tenant marks it (``note_outsider``);
- the roster failing, timing out (``timeout``) or longer than ``max_pages`` pages: shared
  until known (fail closed), cached for ``failure_ttl`` only.

A place is a channel (every thread of it: its ``teams_channel_id``), else the conversation.
A personal chat (the bot and the asker) is never shared.

>>> import asyncio
>>> from agent_core.state import MemoryKeyValueStore
>>> class OneTenant:  # a roster of one page, everyone of t1
...     async def get_paged_members(self, conversation_id, *, page_size, continuation_token):
...         return {"members": [{"id": "29:a", "tenantId": "t1"}]}
>>> places = TeamsPlaces(MemoryKeyValueStore(), home_tenants=["t1"],
...                      connector_for=lambda url: OneTenant())
>>> meta = {"workspace_id": "t1", "channel_id": "19:c@thread.tacv2",
...         "teams_service_url": "https://smba/"}
>>> asyncio.run(places.is_shared(meta))
False
>>> asyncio.run(places.note_outsider("t1", "19:c@thread.tacv2"))
>>> asyncio.run(places.is_shared(meta))
True
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from adapters.teams.connector import ConnectorError, TeamsConnector
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

log = logging.getLogger(__name__)


def _key(tenant: str, place: str) -> str:
    return f"teams:place:shared:{tenant}:{place}"


def place_of(metadata: Mapping[str, Any]) -> str:
    """The place a request is in: its channel (every thread of it), else its conversation.

    >>> place_of({"channel_id": "19:g@thread.tacv2;messageid=1", "teams_channel_id": "19:g"})
    '19:g'
    """
    return str(metadata.get("teams_channel_id") or metadata.get("channel_id") or "")


class TeamsPlaces:
    """See the module docstring; ``await places.is_shared(request_context.metadata)``."""

    def __init__(
        self,
        cache: KeyValueStore,
        *,
        home_tenants: Iterable[str],
        connector_for: Callable[[str], TeamsConnector],
        ttl: float = 3600.0,
        failure_ttl: float = 60.0,
        timeout: float = 10.0,
        max_pages: int = 10,
        page_size: int = 500,
    ) -> None:
        self._cache = cache
        self._connector_for = connector_for
        self.home_tenants = frozenset(t.lower() for t in home_tenants)
        self.ttl = ttl
        self.failure_ttl = min(ttl, failure_ttl)
        self.timeout = timeout
        """Seconds the whole roster read may take; longer means shared until known."""
        self.max_pages = max_pages
        """Pages of ``page_size`` members read at most; a longer roster counts as shared."""
        self.page_size = page_size

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """These places as the running turn reads them (its cache's ``for_turn``)."""
        return turn_view(self, writes, "_cache")

    def is_home(self, tenant: str | None) -> bool:
        return bool(tenant) and str(tenant).lower() in self.home_tenants

    async def cached(self, tenant: str, place: str) -> bool | None:
        """What is known of the place without reading its roster (None: nothing)."""
        found = await self._cache.get(_key(tenant, place))
        return found if isinstance(found, bool) else None

    async def is_shared(self, metadata: Mapping[str, Any]) -> bool:
        """Whether the place of a request's metadata is read by another organisation."""
        if metadata.get("is_dm"):
            return False
        tenant = str(metadata.get("workspace_id") or "")
        place = place_of(metadata)
        from_tenant = metadata.get("teams_from_tenant")
        if not self.is_home(tenant) or (from_tenant and not self.is_home(str(from_tenant))):
            await self.note_outsider(tenant, place)
            return True
        known = await self.cached(tenant, place)
        if known is not None:
            return known
        # the platforms differ here: Slack says whether a channel is shared
        # (conversations.info is_ext_shared); Teams has no such flag, so its roster says
        shared, ttl = await self._read_roster(str(metadata.get("teams_service_url") or ""), place)
        await self._cache.set(_key(tenant, place), shared, ttl=ttl)
        return shared

    async def _read_roster(self, service_url: str, place: str) -> tuple[bool, float]:
        """Whether the roster names another organisation's member, and how long that holds
        (a roster that cannot be read whole counts as shared, for ``failure_ttl``)."""
        token: str | None = None
        try:
            async with asyncio.timeout(self.timeout):
                connector = self._connector_for(service_url)
                for _ in range(self.max_pages):
                    page = await connector.get_paged_members(
                        place, page_size=self.page_size, continuation_token=token
                    )
                    if self._names_an_outsider(page.get("members") or []):
                        return True, self.ttl
                    token = page.get("continuationToken") or None
                    if token is None:
                        return False, self.ttl
        except (ConnectorError, TimeoutError, ValueError) as error:
            log.warning(
                "teams: who reads %s is unknown (%s); answering privately",
                place,
                error or "timed out",
            )
            return True, self.failure_ttl
        log.warning(
            "teams: %s has more than %d pages of members; answering privately",
            place,
            self.max_pages,
        )
        return True, self.failure_ttl

    def _names_an_outsider(self, members: Iterable[Any]) -> bool:
        """A member of another tenant, or one whose tenant the roster does not say."""
        return any(
            not isinstance(m, Mapping) or not self.is_home(m.get("tenantId")) for m in members
        )

    async def note_outsider(self, tenant: str, place: str) -> None:
        """A person of another organisation is in ``place``: shared from now on."""
        if place:
            await self._cache.set(_key(tenant, place), True, ttl=self.ttl)

    async def handle_event(self, tenant: str, activity: Mapping[str, Any]) -> None:
        """A ``conversationUpdate``: ``membersAdded`` naming another tenant marks its place
        shared; any other change (members removed, people added whose tenant Teams does not
        say, the channel changed) forgets what was known, so the next turn reads the roster
        again. A personal chat has no place to note."""
        conversation = _section(activity, "conversation")
        if conversation.get("conversationType") == "personal":
            return
        channel = _section(_section(activity, "channelData"), "channel")
        place = str(channel.get("id") or conversation.get("id") or "")  # as ``place_of``
        if not place:
            return
        added = activity.get("membersAdded")
        if isinstance(added, list) and any(
            isinstance(m, Mapping) and m.get("tenantId") and not self.is_home(m["tenantId"])
            for m in added
        ):
            await self.note_outsider(tenant, place)
            return
        await self._cache.delete(_key(tenant, place))


def _section(wire: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    found = wire.get(name)
    return found if isinstance(found, Mapping) else {}
