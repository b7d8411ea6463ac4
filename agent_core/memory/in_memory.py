"""``InMemoryAgentMemory``: the process-local ``AgentMemory``, ranked by ``ScopeIndex``."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from agent_core.tools.base import ToolContext


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _fingerprint(memory: ToolMemory) -> str:
    return tool_fingerprint(memory.question, memory.tool_name, memory.args, memory.success)


@dataclass
class _Scope:
    """One workspace's memories: the shared index plus the full tool memories (arguments,
    metadata), both in insertion order, which is recency order."""

    index: ScopeIndex
    bodies: dict[str, ToolMemory] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    """fingerprint of (question, tool, args, success) -> memory id, to refresh duplicates"""

    def drop_tool(self, memory_id: str) -> bool:
        memory = self.bodies.pop(memory_id, None)
        if memory is None:
            return False
        self.index.drop_tool(memory_id)
        self.ids.pop(_fingerprint(memory), None)
        return True


class InMemoryAgentMemory(AgentMemory):
    """Agent memory held in this process, one partition per ``memory_scope(context)``.

    Searches rank by lexical relevance (``agent_core.memory.ranking``: stemmed,
    synonym-aware TF-IDF cosine in [0, 1]), so ``similarity_threshold`` keeps the meaning it
    has with embeddings: 0.7 finds close paraphrases, 0.5 looser ones. Only successful tool
    uses are suggested by ``search_similar_usage``; failed ones still show in
    ``get_recent_memories``. Saving a question, tool and arguments that are already stored
    refreshes that memory instead of adding a duplicate. Each scope keeps at most
    ``max_items`` tool memories and as many text memories, dropping the oldest.

    >>> import asyncio
    >>> from agent_core.tools.base import ToolContext
    >>> from agent_core.users import User
    >>> memory = InMemoryAgentMemory()
    >>> ctx = ToolContext(user=User(id="u"), conversation_id="c", request_id="r")
    >>> asyncio.run(memory.save_tool_usage(
    ...     "top 5 customers by revenue", "run_sql", {"sql": "SELECT ..."}, ctx))
    >>> hits = asyncio.run(memory.search_similar_usage(
    ...     "which customers brought in the most revenue", ctx))
    >>> hits[0].memory.args
    {'sql': 'SELECT ...'}
    """

    def __init__(
        self,
        *,
        max_items: int = 10_000,
        analyzer: Analyzer | None = None,
        clock: Callable[[], dt.datetime] = _utc_now,
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self._analyzer = analyzer or Analyzer()
        self._clock = clock
        self._scopes: dict[str, _Scope] = {}

    def _scope(self, context: ToolContext) -> _Scope:
        name = memory_scope(context)
        scope = self._scopes.get(name)
        if scope is None:
            scope = self._scopes[name] = _Scope(ScopeIndex(self._analyzer))
        return scope

    def _now(self) -> str:
        return self._clock().astimezone(dt.UTC).isoformat()

    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: ToolContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        scope = self._scope(context)
        memory = ToolMemory(
            question=question,
            tool_name=tool_name,
            args=dict(args),
            timestamp=self._now(),
            success=success,
            metadata=dict(metadata) if metadata else None,
        ).model_copy(deep=True)
        fingerprint = _fingerprint(memory)
        memory.memory_id = scope.ids.get(fingerprint) or uuid.uuid4().hex
        scope.drop_tool(memory.memory_id)  # a refreshed duplicate moves to the newest end
        scope.bodies[memory.memory_id] = memory
        scope.ids[fingerprint] = memory.memory_id
        scope.index.put_tool(
            memory.memory_id, ToolEntry(question, tool_name, success, memory.timestamp or "")
        )
        while len(scope.bodies) > self.max_items:
            scope.drop_tool(next(iter(scope.bodies)))

    async def save_text_memory(self, content: str, context: ToolContext) -> TextMemory:
        index = self._scope(context).index
        memory = TextMemory(memory_id=uuid.uuid4().hex, content=content, timestamp=self._now())
        index.put_text(memory)
        while len(index.texts) > self.max_items:
            index.drop_text(next(iter(index.texts)))
        return memory.model_copy()

    async def search_similar_usage(
        self,
        question: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]:
        scope = self._scope(context)
        hits = scope.index.search_tools(
            question, limit=limit, threshold=similarity_threshold, tool_name=tool_name_filter
        )
        return [
            ToolMemorySearchResult(
                memory=scope.bodies[key].model_copy(deep=True), similarity_score=score, rank=rank
            )
            for rank, (key, score) in enumerate(hits, start=1)
        ]

    async def search_text_memories(
        self,
        query: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]:
        return self._scope(context).index.search_texts(
            query, limit=limit, threshold=similarity_threshold
        )

    async def get_recent_memories(self, context: ToolContext, limit: int = 10) -> list[ToolMemory]:
        newest_first = reversed(self._scope(context).bodies.values())
        return [m.model_copy(deep=True) for m in itertools.islice(newest_first, max(limit, 0))]

    async def get_recent_text_memories(
        self, context: ToolContext, limit: int = 10
    ) -> list[TextMemory]:
        return self._scope(context).index.recent_texts(limit)

    async def delete_by_id(self, context: ToolContext, memory_id: str) -> bool:
        return self._scope(context).drop_tool(memory_id)

    async def delete_text_memory(self, context: ToolContext, memory_id: str) -> bool:
        return self._scope(context).index.drop_text(memory_id)

    async def clear_memories(
        self,
        context: ToolContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        scope = self._scope(context)
        doomed = scope.index.tools_to_clear(tool_name, before_date)
        for key in doomed:
            scope.drop_tool(key)
        return len(doomed)
