"""Durable state: conversations, memory, turns, dedupe, quotas, caches; memory, SQLite or Redis.

``build_state(StateSettings.from_env())`` (``agent_core.state_factory``, above this package)
picks the backend (``REDIS_URL`` -> Redis,
otherwise SQLite files in ``THREADLINE_DATA_DIR``; ``ephemeral=True`` -> in memory) and
returns a ``State`` holding every store. Importing this package does not import ``redis``;
the Redis classes import it when first used. See ``README.md`` here for how bots wire it.
"""

from agent_core.state.conversations_redis import RedisConversationStore
from agent_core.state.conversations_sqlite import SqliteConversationStore
from agent_core.state.dedupe import DedupeStore
from agent_core.state.draining import DrainingTurnQueue
from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag, KeyValueStore, MemoryKeyValueStore
from agent_core.state.keyvalue_redis import RedisKeyValueStore
from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
from agent_core.state.memory_redis import RedisAgentMemory
from agent_core.state.memory_sqlite import SqliteAgentMemory
from agent_core.state.quotas import MemoryRateLimiter, RateDecision, RateLimiter, RateLimitHook
from agent_core.state.quotas_redis import RedisRateLimiter
from agent_core.state.quotas_sqlite import SqliteRateLimiter
from agent_core.state.redis_client import connect_redis, redis_health
from agent_core.state.sqlite import SqliteDatabase
from agent_core.state.turn_worker import Turn, TurnHandler
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue
from agent_core.state.turns_redis import RedisTurnQueue
from agent_core.state.turns_sqlite import SqliteTurnQueue

__all__ = [
    "DedupeStore",
    "DrainingTurnQueue",
    "Flag",
    "KeyValueStore",
    "MemoryKeyValueStore",
    "MemoryRateLimiter",
    "MemoryTurnQueue",
    "RateDecision",
    "RateLimitHook",
    "RateLimiter",
    "RedisAgentMemory",
    "RedisConversationStore",
    "RedisKeyValueStore",
    "RedisRateLimiter",
    "RedisTurnQueue",
    "SqliteAgentMemory",
    "SqliteConversationStore",
    "SqliteDatabase",
    "SqliteKeyValueStore",
    "SqliteRateLimiter",
    "SqliteTurnQueue",
    "StateHealth",
    "Turn",
    "TurnHandler",
    "TurnQueue",
    "connect_redis",
    "redis_health",
]
