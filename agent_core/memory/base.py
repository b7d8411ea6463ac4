"""Agent memory: what worked before (question -> tool arguments) and free-text notes.

Every memory has an owner and an audience (``MemoryOwnership``): who it came from, where
(a DM, a private answer, a shared conversation), which turn, and whether it is offered to the
rest of its scope yet. Who may be offered what is decided in one place,
``agent_core.memory.access``, and every back end applies it on every read, so the memory
tools, the context enhancer and the ``/memories`` commands cannot leak one person's memories
to another.

Memories are partitioned by ``memory_scope(context)``: the workspace / tenant (and profile)
the request came from, and the asker's data identity (``agent_core.database.askers``), so
nothing crosses workspaces, tenants, profiles or the people who may see different data.

Every operation takes a ``MemoryContext``: who it is for, in which conversation and turn,
with which request metadata. The ``ToolContext`` a tool receives is one, so memory needs
nothing from the tools (and ``ToolContext.agent_memory`` can name ``AgentMemory``).
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict

from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites


class MemoryContext(Protocol):
    """Who a memory read or write is for: the asker, their conversation and turn, and the
    request's metadata (``ui_features_available``, the channel's ``request`` metadata).
    Every ``agent_core.context.ToolContext`` is one.
    """

    @property
    def user(self) -> User: ...

    @property
    def conversation_id(self) -> str: ...

    @property
    def request_id(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


Place = Literal["dm", "private", "conversation", "unknown"]
"""Where a memory was made: the asker's DM with the bot, an answer only the asker saw (Slack
``/ask private``), a shared conversation (channel, thread, group chat), or outside any
channel (library use)."""

MemoryAudience = Literal["owner", "scope"]
"""``owner``: offered to its owner alone; ``scope``: to everyone in its scope (after it was
marked good, or an admin shared it)."""

Verdict = Literal["unrated", "good", "bad"]


def memory_scope(context: MemoryContext) -> str:
    """The partition a request's memories live in: workspace / tenant, plus the profile, plus
    the asker's data identity when they have one of their own (a memory made as one database
    role is never offered to another).

    >>> from agent_core.context import ToolContext
    >>> from agent_core.users import User
    >>> memory_scope(ToolContext(user=User(id="u", metadata={"workspace_id": "T1"}),
    ...     conversation_id="c", request_id="r", metadata={"request": {"profile": "sales"}}))
    'T1/profile:sales'
    >>> memory_scope(ToolContext(user=User(id="u", metadata={"workspace_id": "T1",
    ...     "data_identity": "default/-/fin"}), conversation_id="c", request_id="r"))
    'T1/data:default/-/fin'
    """
    request = context.metadata.get("request") or {}
    scope = (
        context.metadata.get("memory_scope")
        or context.user.metadata.get("workspace_id")
        or request.get("workspace_id")
        or "default"
    )
    profile = context.metadata.get("profile") or request.get("profile")
    scope = f"{scope}/profile:{profile}" if profile else str(scope)
    data = context.user.metadata.get("data_identity")
    return f"{scope}/data:{data}" if data else scope


class MemoryOwnership(BaseModel):
    """Who a memory belongs to and who may be offered it (see ``agent_core.memory.access``).

    ``owner_id`` is the ``User.id`` whose turn made it; ``turn_id`` that turn (the agent's
    request id), so feedback on the answer can rate exactly its memories.
    """

    model_config = ConfigDict(defer_build=True)

    owner_id: str | None = None
    place: Place = "unknown"
    audience: MemoryAudience = "owner"
    verdict: Verdict = "unrated"
    conversation_id: str | None = None
    turn_id: str | None = None

    @property
    def is_private(self) -> bool:
        """Made where only its owner could see it: never offered to anyone else."""
        return self.place in ("dm", "private")


class ToolMemory(MemoryOwnership):
    """A remembered tool use: the question asked and the arguments that answered it.

    ``args`` are tool arguments (SQL...) and ``metadata`` may hold result values: both are
    left out when the memory is offered to someone who may not see them.
    """

    memory_id: str | None = None
    question: str
    tool_name: str
    args: dict[str, Any]
    timestamp: str | None = None
    success: bool = True
    metadata: dict[str, Any] | None = None
    arguments_hidden: bool = False
    """True when ``args`` were withheld from the reader (see ``MemoryReader.offer``)."""


class TextMemory(MemoryOwnership):
    """A free-text note (schema hints, business rules...)."""

    memory_id: str | None = None
    content: str
    timestamp: str | None = None


class ToolMemorySearchResult(BaseModel):
    model_config = ConfigDict(defer_build=True)

    memory: ToolMemory
    similarity_score: float
    rank: int


class TextMemorySearchResult(BaseModel):
    model_config = ConfigDict(defer_build=True)

    memory: TextMemory
    similarity_score: float
    rank: int


class AgentMemory(ABC):
    """RAG-style memory the agent and its tools read and write.

    ``similarity_score`` is in [0, 1]; results below ``similarity_threshold`` are dropped
    and the rest come best first with ``rank`` starting at 1. Every read returns only what
    the reader in ``context`` may be offered (``agent_core.memory.access``); saves record
    ``context``'s user, place and turn as the owner.
    """

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This memory as the running turn whose writes are ``writes`` uses it: itself, but
        on Redis (``agent_core.state.turn_writes``)."""
        return self

    @abstractmethod
    async def save_tool_usage(
        self,
        question: str,
        tool_name: str,
        args: dict[str, Any],
        context: MemoryContext,
        success: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...

    @abstractmethod
    async def save_text_memory(self, content: str, context: MemoryContext) -> TextMemory: ...

    @abstractmethod
    async def search_similar_usage(
        self,
        question: str,
        context: MemoryContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
        tool_name_filter: str | None = None,
    ) -> list[ToolMemorySearchResult]: ...

    @abstractmethod
    async def search_text_memories(
        self,
        query: str,
        context: MemoryContext,
        *,
        limit: int = 10,
        similarity_threshold: float = 0.7,
    ) -> list[TextMemorySearchResult]: ...

    @abstractmethod
    async def get_recent_memories(
        self, context: MemoryContext, limit: int = 10
    ) -> list[ToolMemory]:
        """Most recent first."""

    @abstractmethod
    async def get_recent_text_memories(
        self, context: MemoryContext, limit: int = 10
    ) -> list[TextMemory]:
        """Most recent first."""

    @abstractmethod
    async def delete_by_id(self, context: MemoryContext, memory_id: str) -> bool: ...

    @abstractmethod
    async def delete_text_memory(self, context: MemoryContext, memory_id: str) -> bool: ...

    @abstractmethod
    async def clear_memories(
        self,
        context: MemoryContext,
        tool_name: str | None = None,
        before_date: str | None = None,
    ) -> int:
        """Delete tool memories (optionally one tool's, or older than ``before_date`` ISO);
        returns how many were deleted."""

    async def forget_before(self, when: dt.datetime) -> int:
        """Delete every memory made (or last refreshed) before ``when``, in every scope
        (``agent_core.retention``); how many."""
        raise NotImplementedError(f"{type(self).__name__} cannot sweep old memories")

    async def forget_owner(self, owner_id: str, *, dry_run: bool = False) -> int:
        """Delete every memory made in ``owner_id``'s turns, in every scope; how many.
        Back ends that cannot say refuse (``threadline forget`` reports it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot erase a person's memories")

    async def rate_turn(self, context: MemoryContext, turn_id: str, *, good: bool) -> int:
        """Feedback on the answer of turn ``turn_id``: mark its memories good (offered to
        the scope, unless made in private) or bad (never suggested again, owner only).
        Only the owner's or an admin's rating counts; returns how many memories changed.
        Back ends without ownership support change nothing."""
        return 0

    async def share(self, context: MemoryContext, memory_id: str) -> bool:
        """An admin's decision to offer one memory to its whole scope (never a private
        one); False when refused or not found."""
        return False
