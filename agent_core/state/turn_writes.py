"""``TurnWrites``: a running turn's conversation commits, written with its next durable write.

On Redis a turn records its progress (``turn.record``) and its completion with one script
each. Its conversation commit - the agent saves the turn once, when it ends - needs no round
trip of its own: while a ``RedisTurnQueue`` worker runs the turn, ``RedisConversationStore``
hands the commit to the turn's ``TurnWrites``, and the queue's next script for that turn
(the next progress record, or the completion) writes it too, in the same atomic step. Until
then nobody waits for it: the next turn of the thread starts only after this one completed,
and a turn whose process dies before is run again from the conversation as it was.

    with collecting(redis):          # the worker, around one turn
        ...                          # the agent saves: staged, not sent
        await queue.save_progress()  # progress + the staged commits, one script
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from redis.asyncio import Redis

COMMIT_LUA = """
local function commit(key, index, body, id, at, ttl)
  ttl = tonumber(ttl)
  if ttl > 0 then redis.call('SET', key, body, 'EX', ttl) else redis.call('SET', key, body) end
  redis.call('ZADD', index, at, id)
  if ttl > 0 then redis.call('EXPIRE', index, ttl) else redis.call('PERSIST', index) end
end
-- the commits whose keys start at KEYS[k] (two each) and arguments at ARGV[a] (four each)
local function commits(k, a, n)
  for i = 0, n - 1 do
    commit(KEYS[k + 2 * i], KEYS[k + 2 * i + 1], ARGV[a + 4 * i], ARGV[a + 4 * i + 1],
           ARGV[a + 4 * i + 2], ARGV[a + 4 * i + 3])
  end
end
"""
"""Lua: ``commit`` writes a conversation (body, index entry, expiry; ``ttl`` 0 keeps it)."""


class Commit(NamedTuple):
    """One conversation commit: its two keys and the script arguments."""

    key: str
    index_key: str
    body: str
    conversation_id: str
    updated_at: str
    ttl: int

    @property
    def arguments(self) -> list[Any]:
        return [self.body, self.conversation_id, self.updated_at, self.ttl]


class TurnWrites:
    """The commits a turn staged, latest per conversation, for one Redis client."""

    __slots__ = ("commits", "open", "redis")

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.commits: dict[str, Commit] = {}
        self.open = True
        """False once the turn is over: a task it started that writes later writes at once."""

    def stage(self, commit: Commit) -> None:
        self.commits[commit.key] = commit

    def staged(self) -> list[Commit]:
        return list(self.commits.values())

    def written(self, commits: list[Commit]) -> None:
        """``commits`` reached Redis: forget them (unless staged again since)."""
        for commit in commits:
            if self.commits.get(commit.key) is commit:
                del self.commits[commit.key]


def keys_and_arguments(commits: list[Commit]) -> tuple[list[str], list[Any]]:
    """The script's extra keys and arguments for ``commits`` (see ``COMMIT_LUA``)."""
    keys = [key for commit in commits for key in (commit.key, commit.index_key)]
    return keys, [argument for commit in commits for argument in commit.arguments]


_current: ContextVar[TurnWrites | None] = ContextVar("threadline_turn_writes", default=None)


def staging_for(redis: Redis) -> TurnWrites | None:
    """The running turn's writes, when a worker runs one on this same ``redis``."""
    writes = _current.get()
    return writes if writes is not None and writes.open and writes.redis is redis else None


@contextlib.contextmanager
def collecting(redis: Redis) -> Iterator[TurnWrites]:
    """Stage the conversation commits made inside (and in tasks started inside)."""
    writes = TurnWrites(redis)
    token = _current.set(writes)
    try:
        yield writes
    finally:
        writes.open = False
        _current.reset(token)
