"""``RedisConversationStore``: conversations shared by every bot process through Redis.

Layout (``P`` = ``key_prefix``, ``U`` = the user id, percent-encoded so ids cannot collide)::

    P conv:{U}:<conversation id>   the conversation as JSON (expires after ``ttl``)
    P convs:{U}                    sorted set: conversation id -> updated_at

Both keys of a user share the hash tag ``{U}``. A turn commits with one Lua script (body +
index + expiry together), so another process never sees half a turn; in the view of a turn
a Redis turn worker runs (``for_turn``), that commit goes with the turn's next write to the
queue, in the same script, and the turn's read of its conversation usually comes with its
start, read by the queue's script that started it (``agent_core.state.turn_writes``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from urllib.parse import quote

from agent_core.conversations import Conversation, ConversationStore
from agent_core.state.redis_client import redis_boundary
from agent_core.state.turn_writes import COMMIT_LUA, Commit, TurnBound
from agent_core.users import User

if TYPE_CHECKING:
    from redis.asyncio import Redis

_COMMIT = (
    COMMIT_LUA
    + """
commit(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return 1
"""
)

# Keys of expired conversations are dropped from the index as the listing meets them.
_LIST = """
local ids = redis.call('ZREVRANGE', KEYS[1], 0, -1)
local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, seen = {}, 0
for _, id in ipairs(ids) do
  local body = redis.call('GET', ARGV[1] .. id)
  if body then
    if seen >= offset then
      if #out >= limit then break end
      table.insert(out, body)
    end
    seen = seen + 1
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
"""


class RedisConversationStore(TurnBound, ConversationStore):
    """Conversations in Redis, scoped by user, most recently updated first, each expiring
    ``ttl`` seconds after its last update (``None`` keeps them).

    >>> from agent_core.state.redis_client import connect_redis
    >>> store = RedisConversationStore(connect_redis("redis://127.0.0.1:6379/0"), ttl=86400)
    >>> store.conversation_key("slack:T1:C1:1.0", User(id="slack:T1:U1"))
    'threadline:conv:{slack%3AT1%3AU1}:slack:T1:C1:1.0'
    """

    def __init__(
        self, redis: Redis, *, ttl: float | None = None, key_prefix: str = "threadline:"
    ) -> None:
        self._redis = redis
        self.ttl = ttl
        self.key_prefix = key_prefix
        self._commit = redis.register_script(_COMMIT)
        self._list = redis.register_script(_LIST)

    @redis_boundary
    async def prune_before(self, cutoff: float) -> int:
        """Their TTL expires them by themselves; this catches those written before a shorter
        setting (or with none): each conversation body read, the old ones deleted."""
        match = f"{self.key_prefix}conv:*"
        keys = [key async for key in self._redis.scan_iter(match=match, count=1000)]
        old: list[str] = []
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            for key, body in zip(chunk, await self._redis.mget(chunk), strict=True):
                if body is not None and Conversation.model_validate_json(body).updated_at < cutoff:
                    old.append(key)
        for start in range(0, len(old), 500):
            await self._redis.unlink(*old[start : start + 500])
        return len(old)

    @redis_boundary
    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> int:
        """Every conversation key of ``user_id`` (one hash slot: their tag) and their index."""
        match = f"{self.key_prefix}conv:{self._user_tag(user_id)}:*"
        keys = [key async for key in self._redis.scan_iter(match=match, count=1000)]
        if not dry_run:
            for start in range(0, len(keys), 500):
                await self._redis.unlink(*keys[start : start + 500])
            await self._redis.unlink(self._index_key(user_id))
        return len(keys)

    def _user_tag(self, user_id: str) -> str:
        return "{" + quote(user_id, safe="") + "}"

    def conversation_key(self, conversation_id: str, user: User) -> str:
        return f"{self.key_prefix}conv:{self._user_tag(user.id)}:{conversation_id}"

    def _index_key(self, user_id: str) -> str:
        return f"{self.key_prefix}convs:{self._user_tag(user_id)}"

    async def _write(self, conversation: Conversation) -> None:
        commit = Commit(
            self.conversation_key(conversation.id, conversation.user),
            self._index_key(conversation.user.id),
            conversation.model_dump_json(),
            conversation.id,
            repr(conversation.updated_at),
            0 if self.ttl is None else max(1, math.ceil(self.ttl)),
        )
        if (turn := self._staging) is not None:
            turn.stage(commit)  # written with the turn's next durable write (turn_writes)
            return
        await self._commit([commit.key, commit.index_key], commit.arguments)

    @redis_boundary
    async def create_conversation(
        self, conversation_id: str, user: User, initial_message: str
    ) -> Conversation:
        conversation = Conversation(id=conversation_id, user=user)
        await self._write(conversation)
        return conversation

    @redis_boundary
    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None:
        key = self.conversation_key(conversation_id, user)
        body: str | bytes | None
        found, body = False, None
        if (turn := self._staging) is not None:
            found, body = turn.read(key)  # read as the turn started (turn_writes)
        if not found:
            body = await self._redis.get(key)
        if body is None:
            return None
        conversation = Conversation.model_validate_json(body)
        return conversation if conversation.user.id == user.id else None

    @redis_boundary
    async def update_conversation(self, conversation: Conversation) -> None:
        await self._write(conversation)

    @redis_boundary
    async def delete_conversation(self, conversation_id: str, user: User) -> bool:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.conversation_key(conversation_id, user))
            pipe.zrem(self._index_key(user.id), conversation_id)
            deleted, _ = await pipe.execute()
        return bool(deleted)

    @redis_boundary
    async def list_conversations(
        self, user: User, limit: int = 50, offset: int = 0
    ) -> list[Conversation]:
        if limit <= 0:
            return []
        body_prefix = f"{self.key_prefix}conv:{self._user_tag(user.id)}:"
        bodies = await self._list([self._index_key(user.id)], [body_prefix, max(offset, 0), limit])
        return [Conversation.model_validate_json(body) for body in bodies]
