"""``InMemoryAgentMemory``: the process-local ``AgentMemory``, ranked by ``RelevanceIndex``."""

from __future__ import annotations

import datetime as dt
import itertools
import json
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
from agent_core.memory.ranking import Analyzer, RelevanceIndex

if TYPE_CHECKING:
    from agent_core.tools.base import ToolContext


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_timestamp(value: str) -> dt.datetime:
    """An ISO-8601 date or datetime as an aware UTC datetime (naive values are taken as UTC)."""
    parsed = dt.datetime.fromisoformat(value)
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


@dataclass
class _Scope:
    """One workspace's memories; dicts keep insertion order, which is recency order."""

    analyzer: Analyzer
    tools: dict[str, ToolMemory] = field(default_factory=dict)
    texts: dict[str, TextMemory] = field(default_factory=dict)
    tool_ids: dict[str, str] = field(default_factory=dict)
    """fingerprint of (question, tool, args, success) -> memory id, to refresh duplicates"""
    tool_index: RelevanceIndex = field(init=False)
    text_index: RelevanceIndex = field(init=False)

    def __post_init__(self) -> None:
        self.tool_index = RelevanceIndex(self.analyzer)
        self.text_index = RelevanceIndex(self.analyzer)

    def drop_tool(self, memory_id: str) -> bool:
        memory = self.tools.pop(memory_id, None)
        if memory is None:
            return False
        self.tool_index.remove(memory_id)
        self.tool_ids.pop(_fingerprint(memory), None)
        return True

    def drop_text(self, memory_id: str) -> bool:
        if self.texts.pop(memory_id, None) is None:
            return False
        self.text_index.remove(memory_id)
        return True


def _fingerprint(memory: ToolMemory) -> str:
    return json.dumps(
        [memory.question, memory.tool_name, memory.args, memory.success],
        sort_keys=True,
        default=str,
    )


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
            scope = self._scopes[name] = _Scope(self._analyzer)
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
        memory.memory_id = scope.tool_ids.get(fingerprint) or uuid.uuid4().hex
        scope.drop_tool(memory.memory_id)  # a refreshed duplicate moves to the newest end
        scope.tools[memory.memory_id] = memory
        scope.tool_ids[fingerprint] = memory.memory_id
        scope.tool_index.add(memory.memory_id, question)
        while len(scope.tools) > self.max_items:
            scope.drop_tool(next(iter(scope.tools)))

    async def save_text_memory(self, content: str, context: ToolContext) -> TextMemory:
        scope = self._scope(context)
        memory_id = uuid.uuid4().hex
        memory = TextMemory(memory_id=memory_id, content=content, timestamp=self._now())
        scope.texts[memory_id] = memory
        scope.text_index.add(memory_id, content)
        while len(scope.texts) > self.max_items:
            scope.drop_text(next(iter(scope.texts)))
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

        def eligible(key: object) -> bool:
            memory = scope.tools[str(key)]
            return memory.success and tool_name_filter in (None, memory.tool_name)

        hits = scope.tool_index.search(
            question, limit=max(limit, 0), threshold=similarity_threshold, where=eligible
        )
        return [
            ToolMemorySearchResult(
                memory=scope.tools[str(key)].model_copy(deep=True),
                similarity_score=score,
                rank=rank,
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
        scope = self._scope(context)
        hits = scope.text_index.search(query, limit=max(limit, 0), threshold=similarity_threshold)
        return [
            TextMemorySearchResult(
                memory=scope.texts[str(key)].model_copy(), similarity_score=score, rank=rank
            )
            for rank, (key, score) in enumerate(hits, start=1)
        ]

    async def get_recent_memories(self, context: ToolContext, limit: int = 10) -> list[ToolMemory]:
        newest_first = reversed(self._scope(context).tools.values())
        return [m.model_copy(deep=True) for m in itertools.islice(newest_first, max(limit, 0))]

    async def get_recent_text_memories(
        self, context: ToolContext, limit: int = 10
    ) -> list[TextMemory]:
        newest_first = reversed(self._scope(context).texts.values())
        return [m.model_copy() for m in itertools.islice(newest_first, max(limit, 0))]

    async def delete_by_id(self, context: ToolContext, memory_id: str) -> bool:
        return self._scope(context).drop_tool(memory_id)

    async def delete_text_memory(self, context: ToolContext, memory_id: str) -> bool:
        return self._scope(context).drop_text(memory_id)

    async def clear_memories(
        self,
        context: ToolContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        scope = self._scope(context)
        cutoff = parse_timestamp(before_date) if before_date else None
        doomed = [
            key
            for key, m in scope.tools.items()
            if (tool_name is None or m.tool_name == tool_name)
            and (cutoff is None or parse_timestamp(m.timestamp or "") < cutoff)
        ]
        for key in doomed:
            scope.drop_tool(key)
        return len(doomed)
