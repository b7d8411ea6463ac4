"""Agent memory: the ``AgentMemory`` contract, the in-memory store and relevance ranking.

The store and the ranking load on first use (PEP 562): a module that only needs the contract
(``agent_core.memory.base``) does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_core.memory.base import (
    AgentMemory,
    TextMemory,
    TextMemorySearchResult,
    ToolMemory,
    ToolMemorySearchResult,
    memory_scope,
)

if TYPE_CHECKING:
    from agent_core.memory.in_memory import InMemoryAgentMemory
    from agent_core.memory.index import ScopeIndex, parse_timestamp
    from agent_core.memory.ranking import (
        DEFAULT_SYNONYMS,
        STOP_WORDS,
        Analyzer,
        RelevanceIndex,
        similarity,
        stem,
    )

_ON_USE = {
    "InMemoryAgentMemory": "in_memory",
    "ScopeIndex": "index",
    "parse_timestamp": "index",
    "DEFAULT_SYNONYMS": "ranking",
    "STOP_WORDS": "ranking",
    "Analyzer": "ranking",
    "RelevanceIndex": "ranking",
    "similarity": "ranking",
    "stem": "ranking",
}

__all__ = [
    "DEFAULT_SYNONYMS",
    "STOP_WORDS",
    "AgentMemory",
    "Analyzer",
    "InMemoryAgentMemory",
    "RelevanceIndex",
    "ScopeIndex",
    "TextMemory",
    "TextMemorySearchResult",
    "ToolMemory",
    "ToolMemorySearchResult",
    "memory_scope",
    "parse_timestamp",
    "similarity",
    "stem",
]


def __getattr__(name: str) -> Any:
    module = _ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"agent_core.memory.{module}"), name)
    globals()[name] = value
    return value
