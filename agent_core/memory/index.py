"""``ScopeIndex``: what ranking needs about one memory scope, shared by every ``AgentMemory``.

Each back end keeps a ``ScopeIndex`` per scope in the process: the questions, tool names,
success flags and timestamps of tool memories, and the text memories themselves, indexed by
``RelevanceIndex``. So every back end (in-memory, SQLite, Redis) ranks, filters and orders
identically; only the full tool memories (arguments, metadata) live in each back end's own
storage and are read back for the hits alone.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass
from typing import Any

from agent_core.memory.base import TextMemory, TextMemorySearchResult
from agent_core.memory.ranking import Analyzer, RelevanceIndex


def parse_timestamp(value: str) -> dt.datetime:
    """An ISO-8601 date or datetime as an aware UTC datetime (naive values are taken as UTC)."""
    parsed = dt.datetime.fromisoformat(value)
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


@dataclass(frozen=True)
class ToolEntry:
    """The searchable part of a tool memory (what ranking and filtering need; no arguments).

    >>> ToolEntry.from_meta(ToolEntry("q", "run_sql", True, "2025").to_meta()).tool_name
    'run_sql'
    """

    question: str
    tool_name: str
    success: bool
    timestamp: str

    def to_meta(self) -> dict[str, Any]:
        return {"q": self.question, "t": self.tool_name, "s": self.success, "ts": self.timestamp}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ToolEntry:
        return cls(meta["q"], meta["t"], bool(meta["s"]), meta["ts"])


class ScopeIndex:
    """One scope's ranking state; dicts keep insertion order, which is recency order.

    >>> index = ScopeIndex(Analyzer())
    >>> index.put_tool("m1", ToolEntry("top 5 customers by revenue", "run_sql", True, "2025"))
    >>> [key for key, _ in index.search_tools("which customers brought in the most revenue")]
    ['m1']
    """

    def __init__(self, analyzer: Analyzer) -> None:
        self.tools: dict[str, ToolEntry] = {}
        self.texts: dict[str, TextMemory] = {}
        self._tool_index = RelevanceIndex(analyzer)
        self._text_index = RelevanceIndex(analyzer)

    def put_tool(self, memory_id: str, entry: ToolEntry) -> None:
        """Add or refresh a tool memory; it becomes the newest."""
        self.drop_tool(memory_id)
        self.tools[memory_id] = entry
        self._tool_index.add(memory_id, entry.question)

    def put_text(self, memory: TextMemory) -> None:
        memory_id = memory.memory_id or ""
        self.drop_text(memory_id)
        self.texts[memory_id] = memory.model_copy()
        self._text_index.add(memory_id, memory.content)

    def drop_tool(self, memory_id: str) -> bool:
        if self.tools.pop(memory_id, None) is None:
            return False
        self._tool_index.remove(memory_id)
        return True

    def drop_text(self, memory_id: str) -> bool:
        if self.texts.pop(memory_id, None) is None:
            return False
        self._text_index.remove(memory_id)
        return True

    def search_tools(
        self,
        question: str,
        *,
        limit: int = 10,
        threshold: float = 0.0,
        tool_name: str | None = None,
    ) -> list[tuple[str, float]]:
        """Successful tool memories (optionally of one tool), best first."""

        def eligible(key: object) -> bool:
            entry = self.tools[str(key)]
            return entry.success and tool_name in (None, entry.tool_name)

        hits = self._tool_index.search(
            question, limit=max(limit, 0), threshold=threshold, where=eligible
        )
        return [(str(key), score) for key, score in hits]

    def search_texts(
        self, query: str, *, limit: int = 10, threshold: float = 0.0
    ) -> list[TextMemorySearchResult]:
        hits = self._text_index.search(query, limit=max(limit, 0), threshold=threshold)
        return [
            TextMemorySearchResult(
                memory=self.texts[str(key)].model_copy(), similarity_score=score, rank=rank
            )
            for rank, (key, score) in enumerate(hits, start=1)
        ]

    def recent_texts(self, limit: int) -> list[TextMemory]:
        newest_first = reversed(self.texts.values())
        return [m.model_copy() for m in itertools.islice(newest_first, max(limit, 0))]

    def tools_to_clear(self, tool_name: str | None, before_date: str | None) -> list[str]:
        """Ids ``clear_memories(tool_name, before_date)`` deletes."""
        cutoff = parse_timestamp(before_date) if before_date else None
        return [
            key
            for key, entry in self.tools.items()
            if (tool_name is None or entry.tool_name == tool_name)
            and (cutoff is None or parse_timestamp(entry.timestamp) < cutoff)
        ]


def tool_fingerprint(question: str, tool_name: str, args: dict[str, Any], success: bool) -> str:
    """Identity of a tool use: saving the same one again refreshes it instead of adding."""
    return json.dumps([question, tool_name, args, success], sort_keys=True, default=str)
