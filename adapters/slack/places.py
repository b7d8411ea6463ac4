"""``SlackPlaces``: whether a channel is shared with another organisation (Slack Connect).

Who reads a place is decided here, once per turn, from Slack's own signals:

- the event's envelope, ``is_ext_shared_channel: true``: shared (believed at once);
- else what is cached for the channel, else ``conversations.info``: ``is_ext_shared`` or
  ``is_pending_ext_shared`` (an invitation out is already an outside audience);
- ``channel_shared`` / ``channel_unshared`` events update the cache at once
  (``handle_event``), so the next answer in a channel that became shared is private;
- ``conversations.info`` failing (a missing ``channels:read`` scope, a page): shared until
  known (fail closed), cached for ``failure_ttl`` only.

The bot's own DM is never shared (only the asker and the bot are in it).

>>> import asyncio
>>> from agent_core.state import MemoryKeyValueStore
>>> places = SlackPlaces(MemoryKeyValueStore())
>>> asyncio.run(places.handle_event("T1", {"type": "channel_shared", "channel": "C1"}))
>>> asyncio.run(places.cached("T1", "C1"))
True
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Self

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SLACK_FAILURES, slack_failure
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

log = logging.getLogger(__name__)

PLACE_EVENTS = frozenset({"channel_shared", "channel_unshared"})
"""The events that change whether a channel is shared (subscribed in the manifest)."""


def _key(team: str, channel: str) -> str:
    return f"slack:place:shared:{team}:{channel}"


class SlackPlaces:
    """See the module docstring; ``await places.is_shared(client, "T1", "C1")``."""

    def __init__(
        self, cache: KeyValueStore, *, ttl: float = 3600.0, failure_ttl: float = 60.0
    ) -> None:
        self._cache = cache
        self.ttl = ttl
        self.failure_ttl = min(ttl, failure_ttl)

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """These places as the running turn reads them (its cache's ``for_turn``)."""
        return turn_view(self, writes, "_cache")

    async def cached(self, team: str, channel: str) -> bool | None:
        """What is known of the channel without asking Slack (None: nothing)."""
        found = await self._cache.get(_key(team, channel))
        return found if isinstance(found, bool) else None

    async def is_shared(
        self,
        client: AsyncWebClient,
        team: str,
        channel: str,
        *,
        envelope: bool = False,
        is_dm: bool = False,
    ) -> bool:
        """Whether ``channel`` is read by another organisation (see the module docstring)."""
        if is_dm:
            return False
        if envelope:
            await self._cache.set(_key(team, channel), True, ttl=self.ttl)
            return True
        known = await self.cached(team, channel)
        if known is not None:
            return known
        try:  # Teams' twin reads the roster instead: Teams has no "shared" flag
            response = await client.conversations_info(channel=channel)
        except SLACK_FAILURES as error:
            log.warning(
                "slack: whether channel %s is shared is unknown (%s); answering privately",
                channel,
                slack_failure(error),
            )
            await self._cache.set(_key(team, channel), True, ttl=self.failure_ttl)
            return True
        found: Mapping[str, Any] = response.get("channel") or {}
        shared = bool(found.get("is_ext_shared") or found.get("is_pending_ext_shared"))
        await self._cache.set(_key(team, channel), shared, ttl=self.ttl)
        return shared

    async def handle_event(self, team: str, event: Mapping[str, Any]) -> None:
        """``channel_shared``: shared from now on; ``channel_unshared``: shared while the
        event says another organisation is still in it (``is_ext_shared``)."""
        channel = event.get("channel")
        if not isinstance(channel, str) or not channel:
            return
        match event.get("type"):
            case "channel_shared":
                await self._cache.set(_key(team, channel), True, ttl=self.ttl)
            case "channel_unshared":
                still = bool(event.get("is_ext_shared"))
                await self._cache.set(_key(team, channel), still, ttl=self.ttl)
