"""``KeyValueOAuthStateStore``: the OAuth ``state`` parameter of "Add to Slack", in shared state.

The install page issues a ``state`` and Slack sends it back to the redirect URL, which a
load balancer may route to another process (or host): the state must live where every
process sees it (``state.cache``). Each state is accepted once, before it expires.
"""

from __future__ import annotations

import logging
import secrets
from logging import Logger

from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from agent_core.state import KeyValueStore


class KeyValueOAuthStateStore(AsyncOAuthStateStore):
    """OAuth states with a lifetime of ``expiration_seconds``; ``async_consume`` is True once.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> store = KeyValueOAuthStateStore(MemoryKeyValueStore())
    >>> state = asyncio.run(store.async_issue())
    >>> [asyncio.run(store.async_consume(state)) for _ in range(2)]
    [True, False]
    """

    def __init__(
        self,
        cache: KeyValueStore,
        *,
        expiration_seconds: int = 600,
        logger: Logger | None = None,
    ) -> None:
        self._cache = cache
        self.expiration_seconds = expiration_seconds
        self._logger = logger or logging.getLogger(__name__)

    @property
    def logger(self) -> Logger:
        return self._logger

    @staticmethod
    def _key(state: str) -> str:
        return f"slack:oauth_state:{state}"

    async def async_issue(self, *args: object, **kwargs: object) -> str:
        state = secrets.token_urlsafe(24)
        await self._cache.set(self._key(state), True, ttl=self.expiration_seconds)
        return state

    async def async_consume(self, state: str) -> bool:
        key = self._key(state)
        if await self._cache.get(key) is None:
            return False
        # ``add`` is atomic on every backend: of two concurrent callbacks, one wins
        if not await self._cache.add(f"{key}:used", ttl=self.expiration_seconds):
            return False
        await self._cache.delete(key)
        return True
