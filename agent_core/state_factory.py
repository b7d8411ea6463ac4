"""``build_state``: every store a bot needs, from one backend choice.

- ``ephemeral=True``: in memory (tests, ``--ephemeral`` runs); nothing survives the process.
- ``redis_url`` set (``REDIS_URL``): Redis for everything, so N processes share one app.
- otherwise: SQLite files in ``data_dir`` (``THREADLINE_DATA_DIR``, default
  ``~/.threadline``): ``conversations.db``, ``memory.db`` and ``state.db`` (caches,
  installations and references, dedupe keys, quotas, turns, schedules, the audit trail).
  A restart loses nothing.

It composes the stores of ``agent_core.state``, ``agent_core.usage`` and
``agent_core.schedules``, so it sits above all three, with the other composition code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from agent_core.conversations import ConversationStore, MemoryConversationStore
from agent_core.memory.access import Sharing
from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.settings import Section, env
from agent_core.state.audit import AuditStore, MemoryAuditStore
from agent_core.state.dedupe import DedupeStore
from agent_core.state.health import Backend, StateHealth
from agent_core.state.keyvalue import KeyValueStore, MemoryKeyValueStore
from agent_core.state.quotas import MemoryRateLimiter, RateLimiter, RateLimitHook
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue
from agent_core.usage.ledger import MemoryUsageLedger, UsageLedger

if TYPE_CHECKING:
    from agent_core.schedules.store import ScheduleStore


def default_data_dir() -> Path:
    return Path.home() / ".threadline"


class StateSettings(Section):
    """Where state lives: the ``[state]`` table of ``threadline.toml``, or the environment.
    Building one directly reads nothing else (tests are not affected by a developer's
    ``REDIS_URL``); ``StateSettings.from_env()`` reads the environment.

    >>> StateSettings(ephemeral=True).backend
    'memory'
    >>> StateSettings(redis_url="redis://localhost:6379/0").backend
    'redis'
    >>> kept = StateSettings.from_env({"THREADLINE_CONVERSATION_RETENTION_DAYS": "2"})
    >>> kept.conversation_retention
    172800.0
    """

    table = "state"

    redis_url: str | None = Field(None, validation_alias=env("redis_url", "REDIS_URL"))
    """Share state with every process through Redis (``redis://:password@host:6379/0``)."""
    data_dir: Path = Field(
        default_factory=default_data_dir, validation_alias=env("data_dir", "THREADLINE_DATA_DIR")
    )
    """Where the SQLite state (and the demo database) live without Redis."""
    ephemeral: bool = Field(False, validation_alias=env("ephemeral", "THREADLINE_EPHEMERAL"))
    """Keep everything in memory: nothing survives a restart (one process only)."""
    key_prefix: str = Field(
        "threadline:", validation_alias=env("key_prefix", "THREADLINE_REDIS_PREFIX")
    )
    """Namespace of every Redis key (several apps can share one Redis)."""
    conversation_retention_days: float | None = Field(
        None,
        gt=0,
        validation_alias=env(
            "conversation_retention_days", "THREADLINE_CONVERSATION_RETENTION_DAYS"
        ),
    )
    """Days a conversation is kept after its last update (unset: forever)."""
    claim_after: float = Field(
        30.0, gt=0, validation_alias=env("claim_after", "THREADLINE_CLAIM_AFTER")
    )
    """Seconds without a lease renewal before another worker takes a turn over."""
    memory_refresh_interval: float = Field(
        0.5,
        ge=0,
        validation_alias=env("memory_refresh_interval", "THREADLINE_MEMORY_REFRESH_INTERVAL"),
    )
    """Redis: at most this stale is what other processes saved to memory (0: always fresh)."""
    memory_max_conversations: int = Field(
        10_000,
        ge=1,
        validation_alias=env("memory_max_conversations", "THREADLINE_MEMORY_MAX_CONVERSATIONS"),
    )
    """In memory (``ephemeral``): the most conversations kept (the least recently used go)."""
    memory_max_entries: int = Field(
        100_000,
        ge=1,
        validation_alias=env("memory_max_entries", "THREADLINE_MEMORY_MAX_ENTRIES"),
    )
    """In memory (``ephemeral``): the most entries each cache and dedupe store keeps."""
    memory_sharing: Sharing = Field(
        "on_feedback", validation_alias=env("memory_sharing", "THREADLINE_MEMORY_SHARING")
    )
    """When a memory made in a shared conversation is offered to the workspace:
    ``on_feedback`` (after a thumbs-up or an admin's ``/share``) or ``immediate``."""

    @property
    def conversation_retention(self) -> float | None:
        """Seconds a conversation is kept after its last update (``None``: forever)."""
        days = self.conversation_retention_days
        return None if days is None else days * 86400

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


@dataclass
class State:
    """The stores a bot wires into the agent and its channel adapter.

    - ``conversations`` / ``memory``: ``Agent(conversation_store=..., agent_memory=...)``
    - ``turns``: enqueue accepted messages before the ack; ``run`` workers (per-thread order)
    - ``dedupe``: delivery ids seen (when not deduplicating through ``turns.enqueue``)
    - ``cache``: identity caches (Slack users / groups, Teams members), entries with a TTL
    - ``records``: durable key/value (Slack installations, Teams conversation references)
    - ``rate_limiter``: behind ``rate_limit_hook(...)`` for ``Agent(lifecycle_hooks=[...])``;
      its ``spend`` counters hold the LLM budgets (``agent_core.usage.budgets``)
    - ``usage``: every LLM call's tokens and cost (``agent_core.usage``)
    - ``schedules``: scheduled questions and alerts (``agent_core.schedules``)
    - ``audit``: the hash-chained audit trail (``agent_core.state.audit``)

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
    schedules: ScheduleStore
    usage: UsageLedger = field(default_factory=MemoryUsageLedger)
    audit: AuditStore = field(default_factory=MemoryAuditStore)
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
            return _memory_state(settings)
        case "redis":
            return _redis_state(settings)
        case _:
            return _sqlite_state(settings)


def _memory_state(settings: StateSettings) -> State:
    """Every store in this process, each with a cap: a long run stays within bounded memory
    (schedules by the per-person and per-workspace caps)."""
    from agent_core.schedules.store_memory import MemoryScheduleStore

    entries = settings.memory_max_entries
    return State(
        backend="memory",
        conversations=MemoryConversationStore(max_conversations=settings.memory_max_conversations),
        memory=InMemoryAgentMemory(sharing=settings.memory_sharing),
        turns=MemoryTurnQueue(max_seen=entries),
        dedupe=DedupeStore(MemoryKeyValueStore(max_entries=entries)),
        cache=MemoryKeyValueStore(max_entries=entries),
        records=MemoryKeyValueStore(max_entries=entries),
        rate_limiter=MemoryRateLimiter(),
        schedules=MemoryScheduleStore(),
    )


def _sqlite_state(settings: StateSettings) -> State:
    from agent_core.schedules.store_sqlite import SqliteScheduleStore
    from agent_core.state.audit_sqlite import SqliteAuditStore
    from agent_core.state.conversations_sqlite import SqliteConversationStore
    from agent_core.state.keyvalue_sqlite import SqliteKeyValueStore
    from agent_core.state.memory_sqlite import SqliteAgentMemory
    from agent_core.state.quotas_sqlite import SqliteRateLimiter
    from agent_core.state.sqlite import SqliteDatabase
    from agent_core.state.turns_sqlite import SqliteTurnQueue
    from agent_core.usage.ledger_sqlite import SqliteUsageLedger

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

    audit = SqliteAuditStore(state_db)
    return State(
        backend="sqlite",
        conversations=SqliteConversationStore(
            conversations_db, retention=settings.conversation_retention
        ),
        memory=SqliteAgentMemory(memory_db, sharing=settings.memory_sharing),
        turns=SqliteTurnQueue(state_db, claim_after=settings.claim_after),
        dedupe=DedupeStore(SqliteKeyValueStore(state_db, table="dedupe")),
        cache=SqliteKeyValueStore(state_db, table="cache"),
        records=SqliteKeyValueStore(state_db, table="records"),
        rate_limiter=SqliteRateLimiter(state_db),
        schedules=SqliteScheduleStore(state_db),
        usage=SqliteUsageLedger(state_db),
        audit=audit,
        _probe=probe,
        _closers=[audit.close, *(db.close for db in databases)],  # the queued records first
    )


def _redis_state(settings: StateSettings) -> State:
    from agent_core.schedules.store_redis import RedisScheduleStore
    from agent_core.state.audit_redis import RedisAuditStore
    from agent_core.state.conversations_redis import RedisConversationStore
    from agent_core.state.keyvalue_redis import RedisKeyValueStore
    from agent_core.state.memory_redis import RedisAgentMemory
    from agent_core.state.quotas_redis import RedisRateLimiter
    from agent_core.state.redis_client import connect_redis, redis_health
    from agent_core.state.turns_redis import RedisTurnQueue
    from agent_core.usage.ledger_redis import RedisUsageLedger

    assert settings.redis_url is not None
    client = connect_redis(settings.redis_url)
    prefix = settings.key_prefix

    async def probe() -> StateHealth:
        return await redis_health(client)

    audit = RedisAuditStore(client, key_prefix=prefix)
    return State(
        backend="redis",
        conversations=RedisConversationStore(
            client, ttl=settings.conversation_retention, key_prefix=prefix
        ),
        memory=RedisAgentMemory(
            client,
            key_prefix=prefix,
            sharing=settings.memory_sharing,
            refresh_interval=settings.memory_refresh_interval,
        ),
        turns=RedisTurnQueue(client, key_prefix=prefix, claim_after=settings.claim_after),
        dedupe=DedupeStore(RedisKeyValueStore(client, key_prefix=f"{prefix}dedupe:"), prefix=""),
        cache=RedisKeyValueStore(client, key_prefix=f"{prefix}cache:"),
        records=RedisKeyValueStore(client, key_prefix=f"{prefix}records:"),
        rate_limiter=RedisRateLimiter(client, key_prefix=f"{prefix}rate:"),
        schedules=RedisScheduleStore(client, key_prefix=prefix),
        usage=RedisUsageLedger(client, key_prefix=f"{prefix}usage:"),
        audit=audit,
        _probe=probe,
        _closers=[audit.close, client.aclose],  # the queued records first
    )
