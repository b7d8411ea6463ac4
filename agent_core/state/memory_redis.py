"""``RedisAgentMemory``: agent memory shared by every bot process through Redis.

Memories live in Redis (see ``memory_redis_scripts`` for the layout); each process keeps a
``ScopeIndex`` per scope for ranking and follows the scope's change log before each read
(one round trip when nothing changed), so a memory saved by one process is found by every
other on its next search, ranked exactly as ``InMemoryAgentMemory`` ranks. In the view of a
turn a Redis turn worker runs (``for_turn``), the scope's change counter is usually read as
the turn started (``agent_core.state.turn_writes``): when nothing changed since this process
last followed the log, the search needs no round trip at all.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent_core.clock import utcnow
from agent_core.memory.access import Sharing
from agent_core.memory.base import TextMemory, ToolMemory
from agent_core.memory.index import ScopeIndex, ToolEntry
from agent_core.memory.indexed import IndexedAgentMemory, Kind
from agent_core.memory.ranking import Analyzer
from agent_core.state import memory_redis_scripts as lua
from agent_core.state.redis_client import redis_boundary
from agent_core.state.turn_writes import TurnBound

if TYPE_CHECKING:
    from redis.asyncio import Redis

CHANGES_PER_READ = 1000


@dataclass
class _Mirror:
    """This process's copy of one scope's ranking state and how far it has followed the log."""

    index: ScopeIndex
    seq: int = 0
    last_id: str = "0-0"
    fresh_until: float = 0.0
    local_writes: int = 0
    written_since_follow: bool = False
    """A write of this process since the mirror last followed the log (to be seen at once)."""
    legacy: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))
    """Tool and text memories seen without an owner (written before memories had owners,
    perhaps by an older process): dropped after the refresh that found them."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _pairs(flat: list[Any]) -> dict[str, str]:
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}


class RedisAgentMemory(TurnBound, IndexedAgentMemory):
    """The full ``AgentMemory`` contract in Redis, scoped by ``memory_scope(context)`` and
    offered as ``agent_core.memory.access`` says. A scope written before memories had owners
    loses those memories on first read, with a log line saying how many.

    Every write is one Lua script (memory, indexes and change log together). Reads follow
    the scope's change log (kept to ``log_length`` entries; a process further behind reloads
    the scope's searchable fields in one call), at most once per ``refresh_interval``
    seconds: what another process saved is found within that delay (this process's own
    writes at once), and a busy process does not pay a round trip per search.

    >>> from agent_core.state.redis_client import connect_redis
    >>> memory = RedisAgentMemory(connect_redis("redis://127.0.0.1:6379/0"), max_items=5000)
    >>> memory.scope_keys("T1")[0]
    'threadline:mem:{T1}:tools'
    """

    def __init__(
        self,
        redis: Redis,
        *,
        key_prefix: str = "threadline:",
        max_items: int = 10_000,
        analyzer: Analyzer | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        sharing: Sharing = "on_feedback",
        log_length: int = 10_000,
        refresh_interval: float = 0.5,
    ) -> None:
        super().__init__(max_items=max_items, analyzer=analyzer, clock=clock, sharing=sharing)
        self._redis = redis
        self.key_prefix = key_prefix
        self._log_length = log_length
        self.refresh_interval = refresh_interval
        self._mirrors: dict[str, _Mirror] = {}
        scripts = ("SAVE_TOOL", "SAVE_TEXT", "DELETE", "CHANGES", "SNAPSHOT")
        self._scripts = {name: redis.register_script(getattr(lua, name)) for name in scripts}

    def scope_keys(self, scope: str) -> list[str]:
        base = f"{self.key_prefix}mem:{{{quote(scope, safe='')}}}:"
        return [base + name for name in lua.KEY_NAMES]

    async def _run(self, script: str, scope: str, *args: Any) -> Any:
        return await self._scripts[script](self.scope_keys(scope), [self._log_length, *args])

    async def _write(self, script: str, scope: str, *args: Any) -> Any:
        """Run a mutation; this process's next read of the scope follows the log at once."""
        result = await self._run(script, scope, *args)
        mirror = self._mirrors.get(scope)
        if mirror is not None:
            mirror.local_writes += 1
            mirror.written_since_follow = True
            mirror.fresh_until = 0.0
        return result

    # -- following a scope ---------------------------------------------------------------

    @redis_boundary
    async def _known_scopes(self) -> list[str]:
        from urllib.parse import unquote

        start = len(f"{self.key_prefix}mem:{{")
        found = self._redis.scan_iter(match=f"{self.key_prefix}mem:{{*}}:seq", count=1000)
        return [unquote(name[start : -len("}:seq")]) async for name in found]

    @redis_boundary
    async def _index(self, scope: str, *, fresh: bool = False) -> ScopeIndex:
        mirror = self._mirrors.setdefault(scope, _Mirror(ScopeIndex(self._analyzer)))
        unchanged = self._unchanged_at_start(scope, mirror)
        if not fresh and (unchanged or time.monotonic() < mirror.fresh_until):
            return mirror.index
        async with mirror.lock:
            refreshed_at, writes = time.monotonic(), mirror.local_writes
            while True:
                current, entries = await self._run(
                    "CHANGES", scope, mirror.last_id, CHANGES_PER_READ
                )
                if current == mirror.seq and not entries:
                    break
                if current < mirror.seq or not entries or not self._apply(mirror, entries):
                    await self._reload(scope, mirror)  # Redis lost data, or we fell behind
                    break
                if mirror.seq >= current:
                    break
            if writes == mirror.local_writes:  # else a write of ours may have landed after
                mirror.fresh_until = refreshed_at + self.refresh_interval
                mirror.written_since_follow = False
            legacy, mirror.legacy = mirror.legacy, ([], [])
        if legacy != ([], []):
            await self._forget_legacy(scope, *legacy)
        return mirror.index

    def _unchanged_at_start(self, scope: str, mirror: _Mirror) -> bool:
        """Whether the running turn's start found the scope's change counter where this
        process last followed it (read ahead: ``agent_core.state.turn_writes``), so the
        mirror is current without a round trip. Every search in a turn asks (the turn then
        teaches the asker's next turn the counter's key), even one the mirror answers."""
        turn = self._staging
        if turn is None:
            return False
        found, seq = turn.read(self.scope_keys(scope)[lua.KEY_NAMES.index("seq")])
        return found and int(seq or 0) == mirror.seq and not mirror.written_since_follow

    def _apply(self, mirror: _Mirror, entries: list[Any]) -> bool:
        """Apply log entries in order; False on a gap (the log was trimmed past us)."""
        for entry_id, flat in entries:
            change = _pairs(flat)
            if int(change["seq"]) != mirror.seq + 1:
                return False
            memory_id, op = change["id"], change["op"]
            if op == "put_tool":
                entry = ToolEntry.from_meta(json.loads(change["meta"]))
                mirror.index.put_tool(memory_id, entry)
                if entry.is_legacy:
                    mirror.legacy[0].append(memory_id)
            elif op == "put_text":
                text = self._text(memory_id, change["meta"])
                mirror.index.put_text(text)
                if text.owner_id is None:
                    mirror.legacy[1].append(memory_id)
            elif op == "del_tool":
                mirror.index.drop_tool(memory_id)
            else:
                mirror.index.drop_text(memory_id)
            mirror.seq, mirror.last_id = mirror.seq + 1, str(entry_id)
        return True

    async def _reload(self, scope: str, mirror: _Mirror) -> None:
        seq, last_id, tool_ids, metas, text_ids, texts = await self._run("SNAPSHOT", scope)
        index = ScopeIndex(self._analyzer)
        for memory_id, meta in zip(tool_ids, metas, strict=True):
            index.put_tool(memory_id, ToolEntry.from_meta(json.loads(meta)))
        for memory_id, body in zip(text_ids, texts, strict=True):
            index.put_text(self._text(memory_id, body))
        mirror.index, mirror.seq, mirror.last_id = index, int(seq), str(last_id)
        mirror.legacy = index.legacy()

    @staticmethod
    def _text(memory_id: str, body: str) -> TextMemory:
        return TextMemory.model_validate({**json.loads(body), "memory_id": memory_id})

    @staticmethod
    def _tool(memory_id: str, body: str) -> ToolMemory:
        return ToolMemory.model_validate({**json.loads(body), "memory_id": memory_id})

    # -- storage -------------------------------------------------------------------------

    @redis_boundary
    async def _store_tool(self, scope: str, memory: ToolMemory, fingerprint: str) -> None:
        memory.memory_id = str(
            await self._write(
                "SAVE_TOOL",
                scope,
                fingerprint,
                memory.memory_id,
                memory.model_dump_json(exclude={"memory_id"}),
                json.dumps(ToolEntry.of(memory).to_meta()),
                self.max_items,
            )
        )

    @redis_boundary
    async def _store_text(self, scope: str, memory: TextMemory) -> None:
        body = memory.model_dump_json(exclude={"memory_id"})
        await self._write("SAVE_TEXT", scope, memory.memory_id, body, self.max_items)

    @redis_boundary
    async def _tool_bodies(self, scope: str, ids: list[str]) -> dict[str, ToolMemory]:
        if not ids:
            return {}
        bodies: list[Any] = await self._redis.hmget(self.scope_keys(scope)[0], ids)
        return {
            key: self._tool(key, body)
            for key, body in zip(ids, bodies, strict=True)
            if body is not None
        }

    @redis_boundary
    async def _drop(self, scope: str, kind: Kind, ids: list[str]) -> int:
        if not ids:
            return 0
        return int(await self._write("DELETE", scope, kind, *ids))
