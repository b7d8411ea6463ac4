"""``build_state``: every store a bot needs, from one backend choice.

- ``ephemeral=True``: in memory (tests, ``--ephemeral`` runs); nothing survives the process.
- ``redis_url`` set (``REDIS_URL``): Redis for everything, so N processes share one app.
- otherwise: SQLite files in ``data_dir`` (``THREADLINE_DATA_DIR``, default
  ``~/.threadline``): ``conversations.db``, ``memory.db`` and ``state.db`` (caches,
  installations and references, dedupe keys, quotas, turns). A restart loses nothing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_core.conversations import ConversationStore, MemoryConversationStore
from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.state.dedupe import DedupeStore
from agent_core.state.health import Backend, StateHealth
from agent_core.state.keyvalue import KeyValueStore, MemoryKeyValueStore
from agent_core.state.quotas import MemoryRateLimiter, RateLimiter, RateLimitHook
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue


def default_data_dir() -> Path:
    return Path(os.environ.get("THREADLINE_DATA_DIR") or Path.home() / ".threadline")


class StateSettings(BaseModel):
    """Where state lives. ``StateSettings.from_env()`` reads the environment; the
    constructor never does (so tests are not affected by a developer's ``REDIS_URL``).

    >>> StateSettings(ephemeral=True).backend
    'memory'
    >>> StateSettings(redis_url="redis://localhost:6379/0").backend
    'redis'
    """

    redis_url: str | None = None
    data_dir: Path = Field(default_factory=default_data_dir)
    ephemeral: bool = False
    key_prefix: str = "threadline:"
    """Namespace of every Redis key (several apps can share one Redis)."""
    conversation_retention: float | None = None
    """Seconds a conversation is kept after its last update (``None``: forever)."""
    claim_after: float = Field(default=30.0, gt=0)
    """Seconds without a lease renewal before another worker takes a turn over."""
    memory_refresh_interval: float = Field(default=0.5, ge=0)
    """Redis: at most this stale is what other processes saved to memory (0: always fresh)."""

    def describe(self) -> str:
        """Where state lives, for a startup log line (never the Redis password).

        >>> StateSettings(redis_url="redis://:secret@cache:6379/0").describe()
        'redis at redis://:***@cache:6379/0'
        """
        from agent_core.state.redis_client import redacted

        match self.backend:
            case "memory":
                return "memory (ephemeral: nothing survives a restart)"
            case "redis":
                return f"redis at {redacted(self.redis_url or '')}"
            case _:
                return f"sqlite in {Path(self.data_dir).expanduser()}"

    @property
    def backend(self) -> Backend:
        if self.ephemeral:
            return "memory"
        return "redis" if self.redis_url else "sqlite"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> StateSettings:
        """From ``REDIS_URL``, ``THREADLINE_DATA_DIR``, ``THREADLINE_EPHEMERAL=1``,
        ``THREADLINE_REDIS_PREFIX``, ``THREADLINE_CONVERSATION_RETENTION_DAYS`` and
        ``THREADLINE_CLAIM_AFTER`` (seconds); keyword arguments win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "redis_url": env.get("REDIS_URL") or None,
            "ephemeral": env.get("THREADLINE_EPHEMERAL", "") in ("1", "true", "yes"),
        }
        if env.get("THREADLINE_DATA_DIR"):
            values["data_dir"] = env["THREADLINE_DATA_DIR"]
        if env.get("THREADLINE_REDIS_PREFIX"):
            values["key_prefix"] = env["THREADLINE_REDIS_PREFIX"]
        if env.get("THREADLINE_CLAIM_AFTER"):
            values["claim_after"] = float(env["THREADLINE_CLAIM_AFTER"])
        if env.get("THREADLINE_CONVERSATION_RETENTION_DAYS"):
            days = float(env["THREADLINE_CONVERSATION_RETENTION_DAYS"])
            values["conversation_retention"] = days * 86400
        return cls(**{**values, **overrides})


@dataclass
class State:
    """The stores a bot wires into the agent and its channel adapter.

    - ``conversations`` / ``memory``: ``Agent(conversation_store=..., agent_memory=...)``
    - ``turns``: enqueue accepted messages before the ack; ``run`` workers (per-thread order)
    - ``dedupe``: delivery ids seen (when not deduplicating through ``turns.enqueue``)
    - ``cache``: identity caches (Slack users / groups, Teams members), entries with a TTL
    - ``records``: durable key/value (Slack installations, Teams conversation references)
    - ``rate_limiter``: behind ``rate_limit_hook(...)`` for ``Agent(lifecycle_hooks=[...])``

    >>> import asyncio
    >>> state = build_state(StateSettings(ephemeral=True))
    >>> asyncio.run(state.health()).ok
    True
    """

    backend: Backend
    conversations: ConversationStore
    memory: AgentMemory
    turns: TurnQueue
    dedupe: DedupeStore
    cache: KeyValueStore
    records: KeyValueStore
    rate_limiter: RateLimiter
    _probe: Callable[[], Awaitable[StateHealth]] | None = field(default=None, repr=False)
    _closers: Sequence[Callable[[], Awaitable[Any]]] = field(default=(), repr=False)

    def rate_limit_hook(self, *, limit: int, window: float, **options: Any) -> RateLimitHook:
        """A per-user quota over this state's limiter (shared by every process on Redis)."""
        return RateLimitHook(self.rate_limiter, limit=limit, window=window, **options)

    async def health(self) -> StateHealth:
        """Green when a turn can be accepted now; red (with why) while the backend is down."""
        if self._probe is None:
            return StateHealth(ok=True, backend=self.backend)
        return await self._probe()

    async def aclose(self) -> None:
        for close in self._closers:
            await close()


def build_state(settings: StateSettings | None = None) -> State:
    """Every store on the backend ``settings`` selects (see the module docstring)."""
    settings = settings or StateSettings.from_env()
    match settings.backend:
        case "memory":
            return _memory_state()
        case "redis":
            return _redis_state(settings)
        case _:
            return _sqlite_state(settings)


def _memory_state() -> State:
    return State(
        backend="memory",
        conversations=MemoryConversationStore(),
        memory=InMemoryAgentMemory(),
        turns=MemoryTurnQueue(),
        dedupe=DedupeStore(MemoryKeyValueStore()),
        cache=MemoryKeyValueStore(),
        records=MemoryKeyValueStore(),
        rate_limiter=MemoryRateLimiter(),
    )


def _sqlite_state(settings: StateSettings) -> State:
    from agent_core.state.conversations_sqlite import SqliteConversationStore
    from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
    from agent_core.state.memory_sqlite import SqliteAgentMemory
    from agent_core.state.quotas_sqlite import SqliteRateLimiter
    from agent_core.state.sqlite import SqliteDatabase
    from agent_core.state.turns_sqlite import SqliteTurnQueue

    directory = Path(settings.data_dir).expanduser()
    databases = [
        SqliteDatabase(directory / name) for name in ("conversations.db", "memory.db", "state.db")
    ]
    conversations_db, memory_db, state_db = databases

    async def probe() -> StateHealth:
        try:
            await asyncio.gather(*(db.ping() for db in databases))
        except Exception as error:
            detail = f"{type(error).__name__}: {error}"
            return StateHealth(ok=False, backend="sqlite", detail=detail)
        return StateHealth(ok=True, backend="sqlite")

    return State(
        backend="sqlite",
        conversations=SqliteConversationStore(
            conversations_db, retention=settings.conversation_retention
        ),
        memory=SqliteAgentMemory(memory_db),
        turns=SqliteTurnQueue(state_db, claim_after=settings.claim_after),
        dedupe=DedupeStore(SqliteKeyValueStore(state_db, table="dedupe")),
        cache=SqliteKeyValueStore(state_db, table="cache"),
        records=SqliteKeyValueStore(state_db, table="records"),
        rate_limiter=SqliteRateLimiter(state_db),
        _probe=probe,
        _closers=[db.close for db in databases],
    )


def _redis_state(settings: StateSettings) -> State:
    from agent_core.state.conversations_redis import RedisConversationStore
    from agent_core.state.keyvalue_redis import RedisKeyValueStore
    from agent_core.state.memory_redis import RedisAgentMemory
    from agent_core.state.quotas_redis import RedisRateLimiter
    from agent_core.state.redis_client import connect_redis, redis_health
    from agent_core.state.turns_redis import RedisTurnQueue

    assert settings.redis_url is not None
    client = connect_redis(settings.redis_url)
    prefix = settings.key_prefix

    async def probe() -> StateHealth:
        return await redis_health(client)

    return State(
        backend="redis",
        conversations=RedisConversationStore(
            client, ttl=settings.conversation_retention, key_prefix=prefix
        ),
        memory=RedisAgentMemory(
            client, key_prefix=prefix, refresh_interval=settings.memory_refresh_interval
        ),
        turns=RedisTurnQueue(client, key_prefix=prefix, claim_after=settings.claim_after),
        dedupe=DedupeStore(RedisKeyValueStore(client, key_prefix=f"{prefix}dedupe:"), prefix=""),
        cache=RedisKeyValueStore(client, key_prefix=f"{prefix}cache:"),
        records=RedisKeyValueStore(client, key_prefix=f"{prefix}records:"),
        rate_limiter=RedisRateLimiter(client, key_prefix=f"{prefix}rate:"),
        _probe=probe,
        _closers=[client.aclose],
    )
