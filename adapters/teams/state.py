"""The shared state the Teams adapter keeps: delivery ids (dedupe), identity cache entries,
offered files. It is ``agent_core.state``'s ``KeyValueStore`` (memory, SQLite or Redis):
``TtlStore`` and ``MemoryTtlStore`` are its names here.

>>> import asyncio
>>> store = MemoryTtlStore()
>>> asyncio.run(store.add("activity-1", ttl=60)), asyncio.run(store.add("activity-1", ttl=60))
(True, False)
"""

from __future__ import annotations

from agent_core.state.keyvalue import KeyValueStore as TtlStore
from agent_core.state.keyvalue import MemoryKeyValueStore as MemoryTtlStore

__all__ = ["MemoryTtlStore", "TtlStore"]
