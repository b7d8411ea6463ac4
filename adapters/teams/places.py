"""``TeamsPlaces``: whether a Teams conversation is read by another organisation.

Slack's twin (``adapters.slack.places``) asks Slack; Teams puts no "shared with another
organisation" flag on an activity, so a conversation counts as shared from the first of
these signals the bot sees (kept for ``ttl``, in the state's cache):

- the conversation's own tenant (``conversation.tenantId``) is not one of the
  organisation's: a shared channel another organisation hosts;
- the sender's ``from.tenantId`` is another tenant;
- a member of another tenant: in ``membersAdded`` of a ``conversationUpdate``, or a person
  the identity resolver found to be of another tenant (``note_outsider``).

A personal chat (the bot and the asker) is never shared.

>>> import asyncio
>>> from agent_core.state import MemoryKeyValueStore
>>> places = TeamsPlaces(MemoryKeyValueStore(), home_tenants=["t1"])
>>> meta = {"workspace_id": "t1", "channel_id": "19:c@thread.tacv2"}
>>> asyncio.run(places.is_shared(meta))
False
>>> asyncio.run(places.note_outsider("t1", "19:c@thread.tacv2"))
>>> asyncio.run(places.is_shared(meta))
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent_core.state import KeyValueStore


def _key(tenant: str, conversation: str) -> str:
    return f"teams:place:shared:{tenant}:{conversation}"


class TeamsPlaces:
    """See the module docstring."""

    def __init__(
        self, cache: KeyValueStore, *, home_tenants: Iterable[str], ttl: float = 30 * 86400.0
    ) -> None:
        self._cache = cache
        self.home_tenants = frozenset(t.lower() for t in home_tenants)
        self.ttl = ttl

    def is_home(self, tenant: str | None) -> bool:
        return bool(tenant) and str(tenant).lower() in self.home_tenants

    async def is_shared(self, metadata: Mapping[str, Any]) -> bool:
        """Whether the conversation of a request's metadata is read by another organisation."""
        if metadata.get("is_dm"):
            return False
        tenant = str(metadata.get("workspace_id") or "")
        conversation = str(metadata.get("channel_id") or "")
        from_tenant = metadata.get("teams_from_tenant")
        if not self.is_home(tenant) or (from_tenant and not self.is_home(str(from_tenant))):
            await self.note_outsider(tenant, conversation)
            return True
        return bool(await self._cache.get(_key(tenant, conversation)))

    async def note_outsider(self, tenant: str, conversation: str) -> None:
        """A person of another organisation is in ``conversation``: shared from now on."""
        if conversation:
            await self._cache.set(_key(tenant, conversation), True, ttl=self.ttl)

    async def note_members(
        self, tenant: str, conversation: str, members: Iterable[Mapping[str, Any]]
    ) -> None:
        """``membersAdded``: any member whose ``tenantId`` is another organisation's."""
        for member in members:
            other = member.get("tenantId")
            if other and not self.is_home(str(other)):
                await self.note_outsider(tenant, conversation)
                return
