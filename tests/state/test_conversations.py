"""``ConversationStore`` back ends: the shared contract plus what is specific to each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.conversations import ConversationStore, MemoryConversationStore, Message
from agent_core.state.conversations_redis import RedisConversationStore
from agent_core.state.conversations_sqlite import SqliteConversationStore
from tests.state.conversation_contract import ANA, ConversationStoreContract, a_turn

if TYPE_CHECKING:
    from redis.asyncio import Redis


class TestMemoryConversationStore(ConversationStoreContract):
    @pytest.fixture
    def store(self) -> ConversationStore:
        return MemoryConversationStore()


class TestSqliteConversationStore(ConversationStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[ConversationStore]:
        store = SqliteConversationStore(tmp_path / "conversations.db")
        yield store
        await store.close()


class TestRedisConversationStore(ConversationStoreContract):
    @pytest.fixture
    def store(self, redis: Redis, key_prefix: str) -> ConversationStore:
        return RedisConversationStore(redis, key_prefix=key_prefix)


async def test_sqlite_conversations_survive_a_restart(tmp_path: Path) -> None:
    store = SqliteConversationStore(tmp_path / "conversations.db")
    conversation = await store.create_conversation("slack:T1:C1:1.0", ANA, "q")
    a_turn(conversation, "top customers?", "Acme")
    await store.update_conversation(conversation)
    await store.close()

    reopened = SqliteConversationStore(tmp_path / "conversations.db")
    try:
        assert await reopened.get_conversation("slack:T1:C1:1.0", ANA) == conversation
    finally:
        await reopened.close()


async def test_sqlite_retention_hides_then_deletes_old_conversations(tmp_path: Path) -> None:
    now = [1_000_000.0]
    store = SqliteConversationStore(tmp_path / "c.db", retention=3600, clock=lambda: now[0])
    try:
        old = await store.create_conversation("old", ANA, "q")
        old.updated_at = now[0] - 7200
        await store.update_conversation(old)
        fresh = await store.create_conversation("fresh", ANA, "q")
        fresh.updated_at = now[0]
        await store.update_conversation(fresh)
        assert await store.get_conversation("old", ANA) is None
        assert [c.id for c in await store.list_conversations(ANA)] == ["fresh"]
        now[0] += 7200  # "fresh" is now past retention too; the next write sweeps it
        survivor = await store.create_conversation("new", ANA, "q")
        survivor.updated_at = now[0]
        await store.update_conversation(survivor)
        assert [c.id for c in await store.list_conversations(ANA)] == ["new"]
    finally:
        await store.close()


async def test_redis_commits_a_turn_with_one_command_and_sets_expiry(
    redis: Redis, key_prefix: str
) -> None:
    store = RedisConversationStore(redis, ttl=600, key_prefix=key_prefix)
    conversation = await store.create_conversation("c1", ANA, "q")
    a_turn(conversation, "q", "a")
    await redis.config_resetstat()
    await store.update_conversation(conversation)
    stats = await redis.info("commandstats")
    calls = {name: value["calls"] for name, value in stats.items() if name.startswith("cmdstat_")}
    calls.pop("cmdstat_config|resetstat", None)
    # one round trip (EVALSHA); the script body writes the conversation, index and expiry
    assert calls == {"cmdstat_evalsha": 1, "cmdstat_set": 1, "cmdstat_zadd": 1, "cmdstat_expire": 1}
    ttl = await redis.ttl(store.conversation_key("c1", ANA))
    assert 0 < ttl <= 600


async def test_redis_expired_conversations_leave_the_listing(redis: Redis, key_prefix: str) -> None:
    store = RedisConversationStore(redis, ttl=600, key_prefix=key_prefix)
    for name in ("a", "b", "c"):
        await store.create_conversation(name, ANA, "q")
    await redis.delete(store.conversation_key("b", ANA))  # what expiry does
    assert sorted(c.id for c in await store.list_conversations(ANA)) == ["a", "c"]
    assert len(await store.list_conversations(ANA, limit=1, offset=1)) == 1


async def test_redis_processes_share_conversations(redis_url: str, key_prefix: str) -> None:
    from agent_core.state.redis_client import connect_redis

    one, two = connect_redis(redis_url), connect_redis(redis_url)
    try:
        writer = RedisConversationStore(one, key_prefix=key_prefix)
        reader = RedisConversationStore(two, key_prefix=key_prefix)
        conversation = await writer.create_conversation("c1", ANA, "q")
        conversation.add_message(Message(role="user", content="from process one"))
        await writer.update_conversation(conversation)
        assert await reader.get_conversation("c1", ANA) == conversation
    finally:
        await one.aclose()
        await two.aclose()
