"""``IndexedAgentMemory``: the ``AgentMemory`` contract and its access rules, written once.

Every back end that ships (in memory, SQLite, Redis) ranks with a ``ScopeIndex`` per scope
and keeps full tool memories (arguments, metadata) in its own storage. This base class
implements the whole contract over five storage steps, so the offering rules of
``agent_core.memory.access`` hold for every back end by construction: each read goes
through a ``MemoryReader`` built from the caller's ``MemoryContext``, each save records its
owner.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from agent_core.clock import utcnow
from agent_core.memory.access import MemoryReader, Sharing, ownership_for
from agent_core.memory.base import (
    AgentMemory,
    MemoryContext,
    TextMemory,
    TextMemorySearchResult,
    ToolMemory,
    ToolMemorySearchResult,
    memory_scope,
)
from agent_core.memory.index import ScopeIndex, tool_fingerprint
from agent_core.memory.ranking import Analyzer

logger = logging.getLogger(__name__)

Kind = Literal["tool", "text"]
M = TypeVar("M", ToolMemory, TextMemory)

DELETES_PER_CALL = 500


def fingerprint_of(memory: ToolMemory) -> str:
    return tool_fingerprint(
        memory.owner_id, memory.question, memory.tool_name, memory.args, memory.success
    )


def _rated(memory: M, *, good: bool) -> M:
    audience = "scope" if good and not memory.is_private else "owner"
    return memory.model_copy(update={"verdict": "good" if good else "bad", "audience": audience})


class IndexedAgentMemory(AgentMemory):
    """The contract over a ``ScopeIndex`` per scope; subclasses provide the storage.

    ``max_items`` bounds each kind of memory per scope (the oldest go first); ``sharing``
    says when a memory made in a shared conversation is offered to its scope
    (``"on_feedback"``: once marked good; ``"immediate"``: at once).
    """

    def __init__(
        self,
        *,
        max_items: int = 10_000,
        analyzer: Analyzer | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        sharing: Sharing = "on_feedback",
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self.sharing: Sharing = sharing
        self._analyzer = analyzer or Analyzer()
        self._clock = clock

    # -- storage, per back end -----------------------------------------------------------

    @abstractmethod
    async def _index(self, scope: str, *, fresh: bool = False) -> ScopeIndex:
        """The scope's index (``fresh``: include what other processes wrote just now)."""

    @abstractmethod
    async def _store_tool(self, scope: str, memory: ToolMemory, fingerprint: str) -> None:
        """Store ``memory`` as the scope's newest (replacing the one with the same
        fingerprint, whose id it keeps), index it and trim the scope to ``max_items``."""

    @abstractmethod
    async def _store_text(self, scope: str, memory: TextMemory) -> None:
        """Store ``memory`` as the scope's newest (replacing the one with its id), index it
        and trim the scope to ``max_items``."""

    @abstractmethod
    async def _tool_bodies(self, scope: str, ids: list[str]) -> dict[str, ToolMemory]:
        """The full tool memories of ``ids`` that still exist."""

    @abstractmethod
    async def _drop(self, scope: str, kind: Kind, ids: list[str]) -> int:
        """Delete memories of one kind (storage and index); how many existed."""

    @abstractmethod
    async def _known_scopes(self) -> list[str]:
        """Every scope holding memories (for erasing a person across all of them)."""

    # -- helpers -------------------------------------------------------------------------

    def _now(self) -> str:
        return self._clock().astimezone(dt.UTC).isoformat()

    async def _forget_legacy(self, scope: str, tools: list[str], texts: list[str]) -> None:
        """Drop memories saved before memories had owners (nobody could be offered them)."""
        await self._drop_all(scope, "tool", tools)
        await self._drop_all(scope, "text", texts)
        logger.warning(
            "agent memory: dropped %d tool and %d text memories of scope %r saved before "
            "memories had owners (no one could safely be offered them)",
            len(tools),
            len(texts),
            scope,
        )

    async def _drop_all(self, scope: str, kind: Kind, ids: list[str]) -> int:
        dropped = 0
        for start in range(0, len(ids), DELETES_PER_CALL):
            dropped += await self._drop(scope, kind, ids[start : start + DELETES_PER_CALL])
        return dropped

    async def _offered_tools(
        self, scope: str, reader: MemoryReader, ids: list[str]
    ) -> list[ToolMemory]:
        bodies = await self._tool_bodies(scope, ids)
        return [reader.offer(bodies[key]) for key in ids if key in bodies]

    # -- the AgentMemory contract ----------------------------------------------------------

    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: MemoryContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        owner = ownership_for(context, sharing=self.sharing)
        memory = ToolMemory(
            memory_id=uuid.uuid4().hex,
            question=question,
            tool_name=tool_name,
            args=dict(args),
            timestamp=self._now(),
            success=success,
            metadata=dict(metadata) if metadata else None,
            **owner.model_dump(),
        ).model_copy(deep=True)
        await self._store_tool(memory_scope(context), memory, fingerprint_of(memory))

    async def save_text_memory(self, content: str, context: MemoryContext) -> TextMemory:
        owner = ownership_for(context, sharing=self.sharing)
        memory = TextMemory(
            memory_id=uuid.uuid4().hex,
            content=content,
            timestamp=self._now(),
            **owner.model_dump(),
        )
        await self._store_text(memory_scope(context), memory)
        return memory.model_copy()

    async def search_similar_usage(
        self,
        question: str,
        context: MemoryContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        hits = (await self._index(scope)).search_tools(
            question,
            reader,
            limit=limit,
            threshold=similarity_threshold,
            tool_name=tool_name_filter,
        )
        if not hits:
            return []
        bodies = await self._tool_bodies(scope, [key for key, _ in hits])
        found = [(reader.offer(bodies[key]), score) for key, score in hits if key in bodies]
        return [
            ToolMemorySearchResult(memory=memory, similarity_score=score, rank=rank)
            for rank, (memory, score) in enumerate(found, start=1)
        ]

    async def search_text_memories(
        self,
        query: str,
        context: MemoryContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]:
        index = await self._index(memory_scope(context))
        if not index.texts:  # the common case, asked on every turn: nothing to rank
            return []
        reader = MemoryReader.of(context)
        hits = index.search_texts(query, reader, limit=limit, threshold=similarity_threshold)
        return [
            TextMemorySearchResult(memory=memory, similarity_score=score, rank=rank)
            for rank, (memory, score) in enumerate(hits, start=1)
        ]

    async def get_recent_memories(
        self, context: MemoryContext, limit: int = 10
    ) -> list[ToolMemory]:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        ids = (await self._index(scope)).recent_tools(reader, limit)
        return await self._offered_tools(scope, reader, ids)

    async def get_recent_text_memories(
        self, context: MemoryContext, limit: int = 10
    ) -> list[TextMemory]:
        index = await self._index(memory_scope(context))
        return index.recent_texts(MemoryReader.of(context), limit)

    async def delete_by_id(self, context: MemoryContext, memory_id: str) -> bool:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        entry = (await self._index(scope, fresh=True)).tools.get(memory_id)
        if entry is None or not reader.may_delete(entry.owner):
            return False
        return await self._drop(scope, "tool", [memory_id]) > 0

    async def delete_text_memory(self, context: MemoryContext, memory_id: str) -> bool:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        memory = (await self._index(scope, fresh=True)).texts.get(memory_id)
        if memory is None or not reader.may_delete(memory):
            return False
        return await self._drop(scope, "text", [memory_id]) > 0

    async def clear_memories(
        self,
        context: MemoryContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        index = await self._index(scope, fresh=True)
        return await self._drop_all(
            scope, "tool", index.tools_to_clear(reader, tool_name, before_date)
        )

    async def forget_before(self, when: dt.datetime) -> int:
        count = 0
        for scope in await self._known_scopes():
            index = await self._index(scope, fresh=True)
            tools = [k for k, e in index.tools.items() if _older(e.timestamp, when)]
            texts = [k for k, m in index.texts.items() if _older(m.timestamp, when)]
            count += await self._drop_all(scope, "tool", tools)
            count += await self._drop_all(scope, "text", texts)
        return count

    async def forget_owner(self, owner_id: str, *, dry_run: bool = False) -> int:
        """Delete every memory ``owner_id``'s turns made, in every scope (an erased person;
        shared ones too: a memory holds their question); how many there were."""
        count = 0
        for scope in await self._known_scopes():
            index = await self._index(scope, fresh=True)
            tools = [k for k, e in index.tools.items() if e.owner.owner_id == owner_id]
            texts = [k for k, m in index.texts.items() if m.owner_id == owner_id]
            count += len(tools) + len(texts)
            if not dry_run:
                await self._drop_all(scope, "tool", tools)
                await self._drop_all(scope, "text", texts)
        return count

    async def rate_turn(self, context: MemoryContext, turn_id: str, *, good: bool) -> int:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        index = await self._index(scope, fresh=True)
        tool_ids, texts = index.of_turn(turn_id, reader.may_rate)
        tools = (await self._tool_bodies(scope, tool_ids)).values()
        for tool in tools:
            rated = _rated(tool, good=good)
            await self._store_tool(scope, rated, fingerprint_of(rated))
        for text in texts:
            await self._store_text(scope, _rated(text, good=good))
        return len(tools) + len(texts)

    async def share(self, context: MemoryContext, memory_id: str) -> bool:
        scope, reader = memory_scope(context), MemoryReader.of(context)
        if not reader.is_admin:
            return False
        index = await self._index(scope, fresh=True)
        text = index.texts.get(memory_id)
        if text is not None:
            if text.is_private:
                return False
            await self._store_text(scope, text.model_copy(update={"audience": "scope"}))
            return True
        tool = (await self._tool_bodies(scope, [memory_id])).get(memory_id)
        if tool is None or tool.is_private:
            return False
        shared = tool.model_copy(update={"audience": "scope"})
        await self._store_tool(scope, shared, fingerprint_of(shared))
        return True


def _older(timestamp: str | None, when: dt.datetime) -> bool:
    """Whether a memory stamped ``timestamp`` was made before ``when`` (unstamped: kept)."""
    from agent_core.memory.index import parse_timestamp

    return bool(timestamp) and parse_timestamp(timestamp or "") < when
