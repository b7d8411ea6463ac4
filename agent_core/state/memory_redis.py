"""``RedisAgentMemory``: agent memory shared by every bot process through Redis.

Memories live in Redis (see ``memory_redis_scripts`` for the layout); each process keeps a
``ScopeIndex`` per scope for ranking and follows the scope's change log before each read
(one round trip when nothing changed), so a memory saved by one process is found by every
other on its next search, ranked exactly as ``InMemoryAgentMemory`` ranks.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent_core.memory.base import (
    AgentMemory,
    TextMemory,
    TextMemorySearchResult,
    ToolMemory,
    ToolMemorySearchResult,
    memory_scope,
)
from agent_core.memory.index import ScopeIndex, ToolEntry, tool_fingerprint
from agent_core.memory.ranking import Analyzer
from agent_core.state import memory_redis_scripts as lua
from agent_core.state.redis_client import redis_boundary

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from agent_core.tools.base import ToolContext

CHANGES_PER_READ = 1000
DELETES_PER_CALL = 500


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class _Mirror:
    """This process's copy of one scope's ranking state and how far it has followed the log."""

    index: ScopeIndex
    seq: int = 0
    last_id: str = "0-0"
    fresh_until: float = 0.0
    local_writes: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _pairs(flat: list[Any]) -> dict[str, str]:
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}


class RedisAgentMemory(AgentMemory):
    """The full ``AgentMemory`` contract in Redis, scoped by ``memory_scope(context)``.

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
        clock: Callable[[], dt.datetime] = _utc_now,
        log_length: int = 10_000,
        refresh_interval: float = 0.5,
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._redis = redis
        self.key_prefix = key_prefix
        self.max_items = max_items
        self._analyzer = analyzer or Analyzer()
        self._clock = clock
        self._log_length = log_length
        self.refresh_interval = refresh_interval
        self._mirrors: dict[str, _Mirror] = {}
        scripts = ("SAVE_TOOL", "SAVE_TEXT", "DELETE", "RECENT_TOOLS", "CHANGES", "SNAPSHOT")
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
            mirror.fresh_until = 0.0
        return result

    def _now(self) -> str:
        return self._clock().astimezone(dt.UTC).isoformat()

    # -- following a scope ---------------------------------------------------------------

    async def _index(self, scope: str) -> ScopeIndex:
        mirror = self._mirrors.setdefault(scope, _Mirror(ScopeIndex(self._analyzer)))
        if time.monotonic() < mirror.fresh_until:
            return mirror.index
        async with mirror.lock:
            refreshed_at, writes = time.monotonic(), mirror.local_writes
            while True:
                current, entries = await self._run(
                    "CHANGES", scope, mirror.last_id, CHANGES_PER_READ
                )
                if current == mirror.seq and not entries:
                    break
                if current < mirror.seq or not self._apply(mirror, entries):
                    await self._reload(scope, mirror)  # Redis lost data, or we fell behind
                    break
                if mirror.seq >= current:
                    break
            if writes == mirror.local_writes:  # else a write of ours may have landed after
                mirror.fresh_until = refreshed_at + self.refresh_interval
        return mirror.index

    def _apply(self, mirror: _Mirror, entries: list[Any]) -> bool:
        """Apply log entries in order; False on a gap (the log was trimmed past us)."""
        for entry_id, flat in entries:
            change = _pairs(flat)
            if int(change["seq"]) != mirror.seq + 1:
                return False
            memory_id, op = change["id"], change["op"]
            if op == "put_tool":
                mirror.index.put_tool(memory_id, ToolEntry.from_meta(json.loads(change["meta"])))
            elif op == "put_text":
                mirror.index.put_text(self._text(memory_id, change["meta"]))
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

    @staticmethod
    def _text(memory_id: str, body: str) -> TextMemory:
        return TextMemory.model_validate({**json.loads(body), "memory_id": memory_id})

    @staticmethod
    def _tool(memory_id: str, body: str) -> ToolMemory:
        return ToolMemory.model_validate({**json.loads(body), "memory_id": memory_id})

    # -- the AgentMemory contract --------------------------------------------------------

    @redis_boundary
    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: ToolContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        memory = ToolMemory(
            question=question, tool_name=tool_name, args=dict(args), timestamp=self._now(),
            success=success, metadata=dict(metadata) if metadata else None,
        )  # fmt: skip
        entry = ToolEntry(question, tool_name, success, memory.timestamp or "")
        await self._write(
            "SAVE_TOOL",
            memory_scope(context),
            tool_fingerprint(question, tool_name, args, success),
            uuid.uuid4().hex,
            memory.model_dump_json(exclude={"memory_id"}),
            json.dumps(entry.to_meta()),
            self.max_items,
        )

    @redis_boundary
    async def save_text_memory(self, content: str, context: ToolContext) -> TextMemory:
        memory = TextMemory(memory_id=uuid.uuid4().hex, content=content, timestamp=self._now())
        body = memory.model_dump_json(exclude={"memory_id"})
        await self._write(
            "SAVE_TEXT", memory_scope(context), memory.memory_id, body, self.max_items
        )
        return memory

    @redis_boundary
    async def search_similar_usage(
        self,
        question: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]:
        scope = memory_scope(context)
        hits = (await self._index(scope)).search_tools(
            question, limit=limit, threshold=similarity_threshold, tool_name=tool_name_filter
        )
        if not hits:
            return []
        bodies: list[Any] = await self._redis.hmget(
            self.scope_keys(scope)[0], [key for key, _ in hits]
        )
        found = [
            (self._tool(key, body), score)
            for (key, score), body in zip(hits, bodies, strict=True)
            if body is not None
        ]
        return [
            ToolMemorySearchResult(memory=memory, similarity_score=score, rank=rank)
            for rank, (memory, score) in enumerate(found, start=1)
        ]

    @redis_boundary
    async def search_text_memories(
        self,
        query: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]:
        index = await self._index(memory_scope(context))
        return index.search_texts(query, limit=limit, threshold=similarity_threshold)

    @redis_boundary
    async def get_recent_memories(self, context: ToolContext, limit: int = 10) -> list[ToolMemory]:
        if limit <= 0:
            return []
        ids, bodies = await self._run("RECENT_TOOLS", memory_scope(context), limit)
        return [self._tool(key, body) for key, body in zip(ids, bodies, strict=True) if body]

    @redis_boundary
    async def get_recent_text_memories(
        self, context: ToolContext, limit: int = 10
    ) -> list[TextMemory]:
        return (await self._index(memory_scope(context))).recent_texts(limit)

    @redis_boundary
    async def delete_by_id(self, context: ToolContext, memory_id: str) -> bool:
        return bool(await self._write("DELETE", memory_scope(context), "tool", memory_id))

    @redis_boundary
    async def delete_text_memory(self, context: ToolContext, memory_id: str) -> bool:
        return bool(await self._write("DELETE", memory_scope(context), "text", memory_id))

    @redis_boundary
    async def clear_memories(
        self,
        context: ToolContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        scope = memory_scope(context)
        doomed = (await self._index(scope)).tools_to_clear(tool_name, before_date)
        deleted = 0
        for start in range(0, len(doomed), DELETES_PER_CALL):
            chunk = doomed[start : start + DELETES_PER_CALL]
            deleted += int(await self._write("DELETE", scope, "tool", *chunk))
        return deleted
