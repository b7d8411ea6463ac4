"""The ``ConversationStore`` contract, run against memory, SQLite and Redis.

Subclass ``ConversationStoreContract`` and override the ``store`` fixture to return a fresh,
empty store.
"""

from __future__ import annotations

import pytest

from agent_core.conversations import Conversation, ConversationStore, Message
from agent_core.tool_contract import ToolCall
from agent_core.users import User

ANA = User(id="slack:T1:U1", username="ana", metadata={"workspace_id": "T1"})
BOB = User(id="slack:T1:U2", username="bob", metadata={"workspace_id": "T1"})


def a_turn(conversation: Conversation, question: str, answer: str) -> None:
    conversation.add_message(Message(role="user", content=question))
    conversation.add_message(
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="t1", name="run_sql", arguments={"sql": "SELECT 1"})],
        )
    )
    conversation.add_message(Message(role="tool", content="1", tool_call_id="t1"))
    conversation.add_message(Message(role="assistant", content=answer, metadata={"n": 1}))


class ConversationStoreContract:
    """Behaviour every ``ConversationStore`` must have."""

    @pytest.fixture
    def store(self) -> ConversationStore:
        raise NotImplementedError("override the store fixture")

    async def test_create_then_get(self, store: ConversationStore) -> None:
        created = await store.create_conversation("slack:T1:C1:1.0", ANA, "hello")
        assert created.id == "slack:T1:C1:1.0" and created.user.id == ANA.id
        loaded = await store.get_conversation("slack:T1:C1:1.0", ANA)
        assert loaded is not None
        assert loaded.id == created.id and loaded.messages == []
        assert loaded.user == ANA

    async def test_missing_conversation_is_none(self, store: ConversationStore) -> None:
        assert await store.get_conversation("nope", ANA) is None
        assert await store.delete_conversation("nope", ANA) is False

    async def test_a_committed_turn_round_trips_exactly(self, store: ConversationStore) -> None:
        conversation = await store.create_conversation("c1", ANA, "q")
        a_turn(conversation, "top customers?", "Acme")
        conversation.metadata["title"] = "Customers"
        await store.update_conversation(conversation)
        loaded = await store.get_conversation("c1", ANA)
        assert loaded == conversation

    async def test_update_replaces_the_stored_conversation(self, store: ConversationStore) -> None:
        conversation = await store.create_conversation("c1", ANA, "q")
        a_turn(conversation, "first", "one")
        await store.update_conversation(conversation)
        a_turn(conversation, "second", "two")
        await store.update_conversation(conversation)
        loaded = await store.get_conversation("c1", ANA)
        assert loaded is not None
        assert [m.content for m in loaded.messages if m.role == "user"] == ["first", "second"]

    async def test_users_never_see_each_others_conversations(
        self, store: ConversationStore
    ) -> None:
        """Two people in one thread share the thread key but never a history."""
        mine = await store.create_conversation("slack:T1:C1:1.0", ANA, "q")
        a_turn(mine, "my secret question", "my answer")
        await store.update_conversation(mine)
        assert await store.get_conversation("slack:T1:C1:1.0", BOB) is None
        assert await store.list_conversations(BOB) == []
        assert await store.delete_conversation("slack:T1:C1:1.0", BOB) is False
        assert await store.get_conversation("slack:T1:C1:1.0", ANA) == mine

    async def test_ids_that_look_like_key_separators_do_not_collide(
        self, store: ConversationStore
    ) -> None:
        """Regression: naive ``user:conversation`` keys let ("a}:b", "c") and ("a", "b}:c")
        address the same record."""
        one, two = User(id="a}:b"), User(id="a")
        first = await store.create_conversation("c", one, "q")
        a_turn(first, "one's question", "x")
        await store.update_conversation(first)
        await store.create_conversation("b}:c", two, "q")
        loaded = await store.get_conversation("c", one)
        assert loaded is not None and len(loaded.messages) == 4
        other = await store.get_conversation("b}:c", two)
        assert other is not None and other.messages == []

    async def test_returned_conversations_are_copies(self, store: ConversationStore) -> None:
        conversation = await store.create_conversation("c1", ANA, "q")
        conversation.add_message(Message(role="user", content="unsaved"))
        loaded = await store.get_conversation("c1", ANA)
        assert loaded is not None and loaded.messages == []
        loaded.messages.append(Message(role="user", content="also unsaved"))
        again = await store.get_conversation("c1", ANA)
        assert again is not None and again.messages == []

    async def test_list_is_most_recently_updated_first_and_paginates(
        self, store: ConversationStore
    ) -> None:
        for n in range(5):
            conversation = await store.create_conversation(f"c{n}", ANA, "q")
            conversation.updated_at = 1_000_000.0 + n
            await store.update_conversation(conversation)
        oldest = await store.get_conversation("c0", ANA)
        assert oldest is not None
        oldest.add_message(Message(role="user", content="bump"))
        oldest.updated_at = 2_000_000.0
        await store.update_conversation(oldest)

        everything = [c.id for c in await store.list_conversations(ANA)]
        assert everything == ["c0", "c4", "c3", "c2", "c1"]
        pages = [
            [c.id for c in await store.list_conversations(ANA, limit=2, offset=offset)]
            for offset in (0, 2, 4, 6)
        ]
        assert pages == [["c0", "c4"], ["c3", "c2"], ["c1"], []]
        assert await store.list_conversations(ANA, limit=0) == []

    async def test_delete(self, store: ConversationStore) -> None:
        await store.create_conversation("c1", ANA, "q")
        await store.create_conversation("c2", ANA, "q")
        assert await store.delete_conversation("c1", ANA) is True
        assert await store.delete_conversation("c1", ANA) is False
        assert await store.get_conversation("c1", ANA) is None
        assert [c.id for c in await store.list_conversations(ANA)] == ["c2"]
