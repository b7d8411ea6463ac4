"""Conversation history: ``Message``, ``Conversation``, and the user-scoped store."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.tool_contract import ToolCall
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites

MessageRole = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    """One stored message; assistant messages may carry ``tool_calls``, tool messages answer
    one of them through ``tool_call_id``. Messages are immutable values: history is only ever
    appended to, and filters return new messages (``message.model_copy(update=...)``)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    role: MessageRole
    content: str = ""
    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class Conversation(BaseModel):
    """A user's conversation; in chat channels its id is the thread key."""

    model_config = ConfigDict(defer_build=True)

    id: str
    user: User
    messages: list[Message] = Field(default_factory=list)
    created_at: float = Field(default_factory=SYSTEM_CLOCK.now)
    updated_at: float = Field(default_factory=SYSTEM_CLOCK.now)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def add_message(self, message: Message) -> None:
        self.messages.append(message)
        self.updated_at = SYSTEM_CLOCK.now()

    def snapshot(self) -> Conversation:
        """An independent copy: its own message list and metadata (messages are immutable)."""
        return Conversation(
            id=self.id,
            user=self.user,
            messages=list(self.messages),
            created_at=self.created_at,
            updated_at=self.updated_at,
            metadata=dict(self.metadata),
        )


class ConversationStore(ABC):
    """Persists conversations, always scoped by user: one user can never load another's.

    ``update_conversation`` replaces the stored conversation as one atomic write; the agent
    calls it once per turn, so a turn is committed whole or not at all.
    """

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This store as the running turn whose writes are ``writes`` uses it: itself, but
        on Redis (``agent_core.state.turn_writes``)."""
        return self

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

    async def prune_before(self, cutoff: float) -> int:
        """Delete every conversation last updated before ``cutoff`` (epoch seconds), of
        everyone (``agent_core.retention``); how many."""
        raise NotImplementedError(f"{type(self).__name__} cannot sweep old conversations")

    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> int:
        """Delete every conversation of ``user_id`` (an erased person); how many there were.
        Back ends may do it in one statement; this reads and deletes them a page at a time."""
        user, count = User(id=user_id), 0
        while page := await self.list_conversations(user, limit=500, offset=count * dry_run):
            count += len(page)
            if not dry_run:
                for conversation in page:
                    await self.delete_conversation(conversation.id, user)
        return count


@dataclass(slots=True)
class _Stored:
    """A conversation as ``MemoryConversationStore`` keeps it: without its ``User``, which
    every read is given (the reader is the owner)."""

    messages: tuple[Message, ...]
    created_at: float
    updated_at: float
    metadata: dict[str, Any]

    @classmethod
    def of(cls, conversation: Conversation) -> _Stored:
        return cls(
            tuple(conversation.messages),
            conversation.created_at,
            conversation.updated_at,
            dict(conversation.metadata),
        )

    def conversation(self, conversation_id: str, user: User) -> Conversation:
        return Conversation(
            id=conversation_id,
            user=user,
            messages=list(self.messages),
            created_at=self.created_at,
            updated_at=self.updated_at,
            metadata=dict(self.metadata),
        )


class MemoryConversationStore(ConversationStore):
    """In-process store for tests, demos and ``--ephemeral`` runs.

    Stored snapshots are isolated from the caller's objects, as with a real database. It
    keeps at most ``max_conversations`` (all users together); past that, the least recently
    used conversation is forgotten, so a long-running process stays within bounded memory.

    >>> import asyncio
    >>> store, ana = MemoryConversationStore(max_conversations=1), User(id="ana")
    >>> _ = asyncio.run(store.create_conversation("c1", ana, "hi"))
    >>> asyncio.run(store.get_conversation("c1", User(id="bob"))) is None
    True
    >>> _ = asyncio.run(store.create_conversation("c2", ana, "hi"))
    >>> asyncio.run(store.get_conversation("c1", ana)) is None  # over the cap: forgotten
    True
    """

    def __init__(self, *, max_conversations: int = 10_000) -> None:
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        self.max_conversations = max_conversations
        self._stored: OrderedDict[tuple[str, str], _Stored] = OrderedDict()
        self._by_user: dict[str, dict[str, None]] = {}  # insertion-ordered ids

    def _keep(self, user_id: str, conversation_id: str, stored: _Stored) -> None:
        key = (user_id, conversation_id)
        self._stored[key] = stored
        self._stored.move_to_end(key)
        self._by_user.setdefault(user_id, {})[conversation_id] = None
        while len(self._stored) > self.max_conversations:
            (old_user, old_id), _ = self._stored.popitem(last=False)
            self._forget(old_user, old_id)

    def _forget(self, user_id: str, conversation_id: str) -> None:
        mine = self._by_user.get(user_id)
        if mine is not None:
            mine.pop(conversation_id, None)
            if not mine:
                del self._by_user[user_id]

    async def create_conversation(
        self, conversation_id: str, user: User, initial_message: str
    ) -> Conversation:
        conversation = Conversation(id=conversation_id, user=user)
        self._keep(user.id, conversation_id, _Stored.of(conversation))
        return conversation

    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None:
        key = (user.id, conversation_id)
        stored = self._stored.get(key)
        if stored is None:
            return None
        self._stored.move_to_end(key)
        return stored.conversation(conversation_id, user)

    async def update_conversation(self, conversation: Conversation) -> None:
        self._keep(conversation.user.id, conversation.id, _Stored.of(conversation))

    async def delete_conversation(self, conversation_id: str, user: User) -> bool:
        if self._stored.pop((user.id, conversation_id), None) is None:
            return False
        self._forget(user.id, conversation_id)
        return True

    async def prune_before(self, cutoff: float) -> int:
        old = [key for key, stored in self._stored.items() if stored.updated_at < cutoff]
        for user_id, conversation_id in old:
            del self._stored[(user_id, conversation_id)]
            self._forget(user_id, conversation_id)
        return len(old)

    async def list_conversations(
        self, user: User, limit: int = 50, offset: int = 0
    ) -> list[Conversation]:
        mine = [(cid, self._stored[(user.id, cid)]) for cid in self._by_user.get(user.id, ())]
        mine.sort(key=lambda pair: pair[1].updated_at, reverse=True)
        return [stored.conversation(cid, user) for cid, stored in mine[offset : offset + limit]]
