"""``ScopeIndex``: what ranking and the access rules need about one memory scope, shared by
every ``AgentMemory`` back end.

Each back end keeps a ``ScopeIndex`` per scope in the process: the questions, tool names,
success flags, timestamps and ownership of tool memories, and the text memories themselves,
indexed by ``RelevanceIndex``. So every back end (in-memory, SQLite, Redis) ranks, filters,
orders and applies ``MemoryReader``'s rules identically; only the full tool memories
(arguments, metadata) live in each back end's own storage and are read back for the hits
alone.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_core.memory.access import MemoryReader
from agent_core.memory.base import MemoryOwnership, TextMemory, ToolMemory
from agent_core.memory.ranking import Analyzer, RelevanceIndex

OWNERSHIP_FIELDS = tuple(MemoryOwnership.model_fields)

VERIFIED_BONUS = 0.15
"""How far a memory rated good (a thumbs-up) outranks an unrated one of the same similarity:
a verified example wins unless an unrated one is clearly closer to the question."""

UNOWNED = MemoryOwnership()
"""The ownership of memories saved before memories had owners: offered to no one."""


def ownership_of(memory: MemoryOwnership) -> MemoryOwnership:
    """Only the ownership of a memory (never its question, arguments or content)."""
    return MemoryOwnership(**{name: getattr(memory, name) for name in OWNERSHIP_FIELDS})


def parse_timestamp(value: str) -> dt.datetime:
    """An ISO-8601 date or datetime as an aware UTC datetime (naive values are taken as UTC)."""
    parsed = dt.datetime.fromisoformat(value)
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


@dataclass(frozen=True)
class ToolEntry:
    """The searchable part of a tool memory (what ranking, filtering and the access rules
    need; no arguments).

    >>> entry = ToolEntry("q", "run_sql", True, "2025", MemoryOwnership(owner_id="ana"))
    >>> again = ToolEntry.from_meta(entry.to_meta())
    >>> (again.tool_name, again.owner.owner_id)
    ('run_sql', 'ana')
    """

    question: str
    tool_name: str
    success: bool
    timestamp: str
    owner: MemoryOwnership

    def to_meta(self) -> dict[str, Any]:
        return {
            "q": self.question,
            "t": self.tool_name,
            "s": self.success,
            "ts": self.timestamp,
            "o": self.owner.model_dump(exclude_defaults=True),
        }

    @classmethod
    def of(cls, memory: ToolMemory) -> ToolEntry:
        """The entry of a full tool memory (its ownership, never its arguments)."""
        return cls(
            memory.question,
            memory.tool_name,
            memory.success,
            memory.timestamp or "",
            ownership_of(memory),
        )

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ToolEntry:
        owner = MemoryOwnership.model_validate(meta["o"]) if "o" in meta else UNOWNED
        return cls(meta["q"], meta["t"], bool(meta["s"]), meta["ts"], owner)

    @property
    def is_legacy(self) -> bool:
        """Saved before memories had owners."""
        return self.owner.owner_id is None


def ownership_json(owner: MemoryOwnership) -> str:
    return json.dumps(owner.model_dump(exclude_defaults=True), sort_keys=True)


def ownership_from_json(text: str | None) -> MemoryOwnership:
    return MemoryOwnership.model_validate_json(text) if text else UNOWNED


class ScopeIndex:
    """One scope's ranking state; dicts keep insertion order, which is recency order.

    >>> from agent_core.memory.access import MemoryReader
    >>> ana = MemoryReader("ana", is_admin=False, sees_arguments=False, somewhere_private=False)
    >>> index = ScopeIndex(Analyzer())
    >>> index.put_tool("m1", ToolEntry("top 5 customers by revenue", "run_sql", True, "2025",
    ...                                MemoryOwnership(owner_id="ana")))
    >>> [key for key, _ in index.search_tools("which customers brought in the most revenue",
    ...                                       ana)]
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
        """Add or replace a text memory; it becomes the newest."""
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
        reader: MemoryReader,
        *,
        limit: int = 10,
        threshold: float = 0.0,
        tool_name: str | None = None,
    ) -> list[tuple[str, float]]:
        """Tool memories ``reader`` may take as examples (successful, not rated bad, and
        with arguments they may see), optionally of one tool; best first, where memories
        rated good rank ``VERIFIED_BONUS`` higher than their similarity (which is returned
        unchanged)."""

        def eligible(key: object) -> bool:
            entry = self.tools[str(key)]
            return (
                entry.success
                and tool_name in (None, entry.tool_name)
                and reader.may_suggest(entry.owner)
                and (reader.sees_arguments or reader.owns(entry.owner))
            )

        hits = self._tool_index.search(question, threshold=threshold, where=eligible)

        def rank(hit: tuple[object, float]) -> float:
            verified = self.tools[str(hit[0])].owner.verdict == "good"
            return hit[1] + (VERIFIED_BONUS if verified else 0.0)

        ranked = sorted(hits, key=rank, reverse=True)  # stable: ties keep recency order
        return [(str(key), score) for key, score in ranked[: max(limit, 0)]]

    def search_texts(
        self, query: str, reader: MemoryReader, *, limit: int = 10, threshold: float = 0.0
    ) -> list[tuple[TextMemory, float]]:
        """Text memories ``reader`` may be offered, best first (copies, as offered)."""
        hits = self._text_index.search(
            query,
            limit=max(limit, 0),
            threshold=threshold,
            where=lambda key: reader.may_suggest(self.texts[str(key)]),
        )
        return [(reader.offer(self.texts[str(key)]), score) for key, score in hits]

    def recent_tools(self, reader: MemoryReader, limit: int) -> list[str]:
        """Ids of the newest tool memories ``reader`` may see, newest first."""
        newest_first = reversed(self.tools.items())
        visible = (key for key, entry in newest_first if reader.may_see(entry.owner))
        return list(itertools.islice(visible, max(limit, 0)))

    def recent_texts(self, reader: MemoryReader, limit: int) -> list[TextMemory]:
        visible = (m for m in reversed(self.texts.values()) if reader.may_see(m))
        return [reader.offer(m) for m in itertools.islice(visible, max(limit, 0))]

    def tools_to_clear(
        self, reader: MemoryReader, tool_name: str | None, before_date: str | None
    ) -> list[str]:
        """Ids ``clear_memories(tool_name, before_date)`` deletes for ``reader``."""
        cutoff = parse_timestamp(before_date) if before_date else None
        return [
            key
            for key, entry in self.tools.items()
            if (tool_name is None or entry.tool_name == tool_name)
            and (cutoff is None or parse_timestamp(entry.timestamp) < cutoff)
            and reader.may_delete(entry.owner)
        ]

    def of_turn(
        self, turn_id: str, allowed: Callable[[MemoryOwnership], bool]
    ) -> tuple[list[str], list[TextMemory]]:
        """The tool memory ids and text memories made in turn ``turn_id`` that pass
        ``allowed``."""
        tools = [
            key
            for key, entry in self.tools.items()
            if entry.owner.turn_id == turn_id and allowed(entry.owner)
        ]
        texts = [m for m in self.texts.values() if m.turn_id == turn_id and allowed(m)]
        return tools, texts

    def legacy(self) -> tuple[list[str], list[str]]:
        """Ids of tool and text memories saved before memories had owners."""
        return (
            [key for key, entry in self.tools.items() if entry.is_legacy],
            [key for key, memory in self.texts.items() if memory.owner_id is None],
        )


def tool_fingerprint(
    owner_id: str | None, question: str, tool_name: str, args: dict[str, Any], success: bool
) -> str:
    """Identity of one person's tool use: saving the same one again refreshes it instead of
    adding (another person's identical use is a memory of its own)."""
    return json.dumps([owner_id, question, tool_name, args, success], sort_keys=True, default=str)
