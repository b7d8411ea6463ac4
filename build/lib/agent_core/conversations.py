"""Conversation history: ``Message``, ``Conversation``, and the user-scoped store."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.tools.base import ToolCall
from agent_core.users import User

MessageRole = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    """One stored message; assistant messages may carry ``tool_calls``, tool messages answer
    one of them through ``tool_call_id``. Messages are immutable values: history is only ever
    appended to, and filters return new messages (``message.model_copy(update=...)``)."""

    model_config = ConfigDict(frozen=True)

    role: MessageRole
    content: str = ""
    timestamp: float = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class Conversation(BaseModel):
    """A user's conversation; in chat channels its id is the thread key."""

    id: str
    user: User
    messages: list[Message] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def add_message(self, message: Message) -> None:
        self.messages.append(message)
        self.updated_at = time.time()

    def snapshot(self) -> Conversation:
        """An independent copy: its own message list and metadata (messages are immutable)."""
        return self.model_copy(
            update={"messages": list(self.messages), "metadata": dict(self.metadata)}
        )


class ConversationStore(ABC):
    """Persists conversations, always scoped by user: one user can never load another's.

    ``update_conversation`` replaces the stored conversation as one atomic write; the agent
    calls it once per turn, so a turn is committed whole or not at all.
    """

    @abstractmethod
    async def create_conversation(
        self, conversation_id: str, user: User, initial_message: str
    ) -> Conversation: ...

    @abstractmethod
    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None: ...

    @abstractmethod
    async def update_conversation(self, conversation: Conversation) -> None: ...

    @abstractmethod
    async def delete_conversation(self, conversation_id: str, user: User) -> bool: ...

    @abstractmethod
    async def list_conversations(
        self, user: User, limit: int = 50, offset: int = 0
    ) -> list[Conversation]:
        """The user's conversations, most recently updated first."""


class MemoryConversationStore(ConversationStore):
    """In-process store for tests, demos and ``--ephemeral`` runs.

    Stored snapshots are isolated from the caller's objects, as with a real database.

    >>> import asyncio
    >>> store, ana = MemoryConversationStore(), User(id="ana")
    >>> _ = asyncio.run(store.create_conversation("c1", ana, "hi"))
    >>> asyncio.run(store.get_conversation("c1", User(id="bob"))) is None
    True
    """

    def __init__(self) -> None:
        self._by_user: dict[str, dict[str, Conversation]] = {}

    async def create_conversation(
        self, conversation_id: str, user: User, initial_message: str
    ) -> Conversation:
        conversation = Conversation(id=conversation_id, user=user)
        self._by_user.setdefault(user.id, {})[conversation_id] = conversation.snapshot()
        return conversation

    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None:
        stored = self._by_user.get(user.id, {}).get(conversation_id)
        return None if stored is None else stored.snapshot()

    async def update_conversation(self, conversation: Conversation) -> None:
        self._by_user.setdefault(conversation.user.id, {})[conversation.id] = (
            conversation.snapshot()
        )

    async def delete_conversation(self, conversation_id: str, user: User) -> bool:
        return self._by_user.get(user.id, {}).pop(conversation_id, None) is not None

    async def list_conversations(
        self, user: User, limit: int = 50, offset: int = 0
    ) -> list[Conversation]:
        mine = sorted(
            self._by_user.get(user.id, {}).values(), key=lambda c: c.updated_at, reverse=True
        )
        return [c.snapshot() for c in mine[offset : offset + limit]]
