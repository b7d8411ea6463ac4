"""Agent memory: the ``AgentMemory`` contract, the in-memory store and relevance ranking."""

from agent_core.memory.base import (
    AgentMemory,
    TextMemory,
    TextMemorySearchResult,
    ToolMemory,
    ToolMemorySearchResult,
    memory_scope,
)
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
