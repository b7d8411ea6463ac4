"""Agent memory: what worked before (question -> tool arguments) and free-text notes.

Memories are scoped by ``memory_scope(context)``: the workspace / tenant the request came
from, so what one Slack workspace teaches the agent never leaks into another.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from agent_core.tools.base import ToolContext


def memory_scope(context: ToolContext) -> str:
    """The partition a request's memories live in (workspace, tenant, or ``default``)."""
    scope = context.metadata.get("memory_scope") or context.user.metadata.get("workspace_id")
    return str(scope) if scope else "default"


class ToolMemory(BaseModel):
    """A remembered tool use: the question asked and the arguments that answered it."""

    memory_id: str | None = None
    question: str
    tool_name: str
    args: dict[str, Any]
    timestamp: str | None = None
    success: bool = True
    metadata: dict[str, Any] | None = None


class TextMemory(BaseModel):
    """A free-text note (schema hints, business rules...)."""

    memory_id: str | None = None
    content: str
    timestamp: str | None = None


class ToolMemorySearchResult(BaseModel):
    memory: ToolMemory
    similarity_score: float
    rank: int


class TextMemorySearchResult(BaseModel):
    memory: TextMemory
    similarity_score: float
    rank: int


class AgentMemory(ABC):
    """RAG-style memory the agent and its tools read and write.

    ``similarity_score`` is in [0, 1]; results below ``similarity_threshold`` are dropped
    and the rest come best first with ``rank`` starting at 1.
    """

    @abstractmethod
    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: ToolContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...

    @abstractmethod
    async def save_text_memory(self, content: str, context: ToolContext) -> TextMemory: ...

    @abstractmethod
    async def search_similar_usage(
        self,
        question: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]: ...

    @abstractmethod
    async def search_text_memories(
        self,
        query: str,
        context: ToolContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]: ...

    @abstractmethod
    async def get_recent_memories(self, context: ToolContext, limit: int = 10) -> list[ToolMemory]:
        """Most recent first."""

    @abstractmethod
    async def get_recent_text_memories(
        self, context: ToolContext, limit: int = 10
    ) -> list[TextMemory]:
        """Most recent first."""

    @abstractmethod
    async def delete_by_id(self, context: ToolContext, memory_id: str) -> bool: ...

    @abstractmethod
    async def delete_text_memory(self, context: ToolContext, memory_id: str) -> bool: ...

    @abstractmethod
    async def clear_memories(
        self,
        context: ToolContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        """Delete tool memories (optionally one tool's, or older than ``before_date`` ISO);
        returns how many were deleted."""
