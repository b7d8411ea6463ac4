"""``TurnWrites``: a running turn's conversation commits, written with its next durable write,
and its conversation read, read with its start.

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

The turn's *reads* need no round trip of their own either, most of the time: the keys a
turn reads (its conversation, the asker's identity in the cache, the memory's change
counter) name the asker as the user resolver names them, which the queue cannot know when
the turn is recorded - but the asker's previous turn knew them. So the completion script
notes which keys the turn's stores read (``reads``: at most ``MAX_READS``), under the
turn's owner, with the turn's ordering key replaced by ``MARK`` wherever it appears in
one (a conversation is named by its thread); the script that starts the asker's next turn
(the enqueue that hands it to a worker, or ``begin``) reads those keys, with that turn's
ordering key in place of the mark, and hands their values to the turn (``read_ahead``).

A store takes a value only for the exact key it would read (anyone else, a resolver that
names people differently, a key grown past ``READ_AHEAD_BYTES``: a read of its own, as
before), once, and never after the turn wrote that key itself. The value is as fresh as a
read made as the turn started: the earlier turns of its ordering key completed before it,
with their commits, and anything else writing those keys could as well have written just
after the store's own read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
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


MAX_READS = 8
"""Keys one turn's reads teach the asker's next turn."""
READ_AHEAD_BYTES = 256 * 1024
"""A value larger than this is not read ahead (it would lengthen the enqueue, before the
platform's ack): the store reads it itself."""
MARK = "\x00"
"""Stands for the turn's ordering key in the keys a turn taught the next one."""


class TurnWrites:
    """The commits a turn staged, latest per conversation, and the values read ahead for it,
    for one Redis client.

    >>> from agent_core.state.redis_client import connect_redis
    >>> writes = TurnWrites(connect_redis("redis://127.0.0.1:6379/0"), {"k": "v"})
    >>> writes.read("k"), writes.read("k"), writes.reads
    ((True, 'v'), (False, None), ['k'])
    """

    __slots__ = ("commits", "open", "read_ahead", "reads", "redis")

    def __init__(self, redis: Redis, read_ahead: Mapping[str, str | None] | None = None) -> None:
        self.redis = redis
        self.commits: dict[str, Commit] = {}
        self.read_ahead = dict(read_ahead or {})
        self.reads: list[str] = []
        """The keys the turn's stores read, in order (taught to the next turn)."""
        self.open = True
        """False once the turn is over: a task it started that writes later writes at once."""

    def read(self, key: str) -> tuple[bool, str | None]:
        """A store reads ``key``: ``(True, value)`` when it was read ahead (once: a second
        read goes to Redis), else ``(False, None)``. Either way the key is noted."""
        if key not in self.reads and len(self.reads) < MAX_READS:
            self.reads.append(key)
        if key in self.read_ahead:
            return True, self.read_ahead.pop(key)
        return False, None

    def wrote(self, key: str) -> None:
        """The turn wrote ``key`` itself: what was read ahead for it is stale."""
        self.read_ahead.pop(key, None)

    def taught(self, ordering_key: str) -> list[str]:
        """The keys read, as the next turn of the asker is taught them: ``ordering_key``
        replaced by ``MARK``."""
        return [key.replace(ordering_key, MARK, 1) if ordering_key else key for key in self.reads]

    def stage(self, commit: Commit) -> None:
        self.wrote(commit.key)
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
def collecting(
    redis: Redis, read_ahead: Mapping[str, str | None] | None = None
) -> Iterator[TurnWrites]:
    """Stage the conversation commits made inside (and in tasks started inside), and offer
    them what was ``read_ahead``."""
    writes = TurnWrites(redis, read_ahead)
    token = _current.set(writes)
    try:
        yield writes
    finally:
        writes.open = False
        _current.reset(token)
