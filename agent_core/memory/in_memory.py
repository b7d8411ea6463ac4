"""``InMemoryAgentMemory``: the process-local ``AgentMemory``, ranked by ``ScopeIndex``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_core.clock import utcnow
from agent_core.memory.access import Sharing
from agent_core.memory.base import TextMemory, ToolMemory
from agent_core.memory.index import ScopeIndex, ToolEntry
from agent_core.memory.indexed import IndexedAgentMemory, Kind, fingerprint_of
from agent_core.memory.ranking import Analyzer


@dataclass
class _Scope:
    """One scope's memories: the shared index plus the full tool memories (arguments,
    metadata), both in insertion order, which is recency order."""

    index: ScopeIndex
    bodies: dict[str, ToolMemory] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    """fingerprint of (owner, question, tool, args, success) -> memory id"""

    def drop_tool(self, memory_id: str) -> bool:
        memory = self.bodies.pop(memory_id, None)
        if memory is None:
            return False
        self.index.drop_tool(memory_id)
        self.ids.pop(fingerprint_of(memory), None)
        return True


class InMemoryAgentMemory(IndexedAgentMemory):
    """Agent memory held in this process, one partition per ``memory_scope(context)``.

    Searches rank by lexical relevance (``agent_core.memory.ranking``: stemmed,
    synonym-aware TF-IDF cosine in [0, 1]), so ``similarity_threshold`` keeps the meaning it
    has with embeddings: 0.7 finds close paraphrases, 0.5 looser ones. Only successful tool
    uses are suggested by ``search_similar_usage``; failed ones still show in
    ``get_recent_memories``. Saving a question, tool and arguments that the same person
    already stored refreshes that memory instead of adding a duplicate. Each scope keeps at
    most ``max_items`` tool memories and as many text memories, dropping the oldest. What
    each reader is offered follows ``agent_core.memory.access``.

    >>> import asyncio
    >>> from agent_core.context import ToolContext
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
        clock: Callable[[], dt.datetime] = utcnow,
        sharing: Sharing = "on_feedback",
    ) -> None:
        super().__init__(max_items=max_items, analyzer=analyzer, clock=clock, sharing=sharing)
        self._scopes: dict[str, _Scope] = {}

    def _scope(self, name: str) -> _Scope:
        scope = self._scopes.get(name)
        if scope is None:
            scope = self._scopes[name] = _Scope(ScopeIndex(self._analyzer))
        return scope

    async def _index(self, scope: str, *, fresh: bool = False) -> ScopeIndex:
        return self._scope(scope).index

    async def _known_scopes(self) -> list[str]:
        return list(self._scopes)

    async def _store_tool(self, scope: str, memory: ToolMemory, fingerprint: str) -> None:
        held = self._scope(scope)
        memory.memory_id = held.ids.get(fingerprint) or memory.memory_id
        assert memory.memory_id is not None
        held.drop_tool(memory.memory_id)  # a refreshed memory moves to the newest end
        held.bodies[memory.memory_id] = memory.model_copy(deep=True)
        held.ids[fingerprint] = memory.memory_id
        held.index.put_tool(memory.memory_id, ToolEntry.of(memory))
        while len(held.bodies) > self.max_items:
            held.drop_tool(next(iter(held.bodies)))

    async def _store_text(self, scope: str, memory: TextMemory) -> None:
        index = self._scope(scope).index
        index.put_text(memory)
        while len(index.texts) > self.max_items:
            index.drop_text(next(iter(index.texts)))

    async def _tool_bodies(self, scope: str, ids: list[str]) -> dict[str, ToolMemory]:
        bodies = self._scope(scope).bodies
        return {key: bodies[key].model_copy(deep=True) for key in ids if key in bodies}

    async def _drop(self, scope: str, kind: Kind, ids: list[str]) -> int:
        held = self._scope(scope)
        drop = held.drop_tool if kind == "tool" else held.index.drop_text
        return sum(drop(key) for key in ids)
