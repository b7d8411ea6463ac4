"""``DedupeStore``: "have we seen this delivery before?" for Slack retries and Teams
redeliveries."""

from __future__ import annotations

from agent_core.state.keyvalue import KeyValueStore


class DedupeStore:
    """``first_time(key, ttl)`` is True exactly once per ``key`` within ``ttl`` seconds, even
    across processes when the underlying store is Redis (``SET NX``) or across restarts when
    it is SQLite (``INSERT OR IGNORE``).

    Check *after* verifying the request's signature (so forged deliveries cannot burn keys)
    and *before* acting on it. When the turn is queued, prefer
    ``TurnQueue.enqueue(..., dedupe_key=...)``, which records the key and the turn in one
    atomic step, so a crash between the two cannot drop the retry that would have saved it.

    >>> import asyncio
    >>> from agent_core.state.keyvalue import MemoryKeyValueStore
    >>> seen = DedupeStore(MemoryKeyValueStore())
    >>> [asyncio.run(seen.first_time("slack:event:Ev1")) for _ in range(2)]
    [True, False]
    """

    def __init__(
        self, store: KeyValueStore, *, prefix: str = "dedupe:", default_ttl: float = 3600.0
    ) -> None:
        self._store = store
        self._prefix = prefix
        self.default_ttl = default_ttl

    async def first_time(self, key: str, ttl: float | None = None) -> bool:
        """True when ``key`` was not seen in the last ``ttl`` seconds (and records it)."""
        return await self._store.add(self._prefix + key, ttl=ttl or self.default_ttl)

    async def forget(self, key: str) -> None:
        """Let ``key`` through again (e.g. the delivery could not be accepted after all)."""
        await self._store.delete(self._prefix + key)
