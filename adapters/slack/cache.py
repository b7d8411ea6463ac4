"""The key/value cache the Slack adapter keeps identity lookups and delivery flags in.

``TtlCache`` is ``agent_core.state.KeyValueStore``: pass the bot's ``state.cache`` (memory,
SQLite or Redis) so every process shares identity lookups, dedupe keys and "the bot is in
this thread" flags. ``MemoryTtlCache`` is the in-process one (tests, one process).

>>> import asyncio
>>> cache = MemoryTtlCache()
>>> asyncio.run(cache.add("event:Ev1", ttl=60)), asyncio.run(cache.add("event:Ev1", ttl=60))
(True, False)
"""

from __future__ import annotations

from agent_core.state.keyvalue import KeyValueStore as TtlCache
from agent_core.state.keyvalue import MemoryKeyValueStore as MemoryTtlCache

__all__ = ["MemoryTtlCache", "TtlCache"]
