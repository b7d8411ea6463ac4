"""``TurnWrites``: a running turn's writes, written with its next durable write, and its reads,
read with its start.

On Redis a turn records its progress (``turn.record``) and its completion with one script
each. Its conversation commit - the agent saves the turn once, when it ends - needs no round
trip of its own: while a ``RedisTurnQueue`` worker runs the turn, the turn's view of the
``RedisConversationStore`` hands the commit to the turn's ``TurnWrites``, and the queue's
next script for that turn (the next progress record, or the completion) writes it too, in
the same atomic step. Until then nobody waits for it: the next turn of the thread starts
only after this one completed, and a turn whose process dies before is run again from the
conversation as it was. An append to a bounded log of the cache (``KeyValueStore.append``:
a Slack thread's transcript, marked "told" by each turn) travels the same way, when its
log was read ahead.

The worker makes the turn's ``TurnWrites`` (``TurnBackend.turn_writes``: None where the
back end writes nothing with its records), hands it to the queue's records and to the
handler (``Turn.writes``), and closes it when the turn is over. Nothing finds it on its
own: whoever answers the turn hands it to the stores the turn uses, each of which gives a
view of itself for that turn (``for_turn``; a ``TurnBound`` Redis store's view stages into
it, any other store, and ``for_turn(None)``, is the store itself), and to whatever holds a
store (a cache's holder: ``turn_view``). ``bots.turns.TurnHost`` does it once per turn: the
wing (``Wing.for_turn``: its caches) and the agent (``send_message(writes=)``:
``TurnDeps.for_turn``, its conversation store, memory, resolver and approval book)::

    writes = queue.turn_writes(start.read_ahead)    # the worker, as one turn starts
    await handler(Turn(..., writes))                # the host hands it on:
    store = conversations.for_turn(turn.writes)     #   the turn's view of a store
    await store.update_conversation(conversation)   #   staged, not sent
    await queue.save_progress(delivery, progress, writes)  # both, one script
    writes.close()                                  # the turn is over: views write at once

A store used outside a turn (a sweep, a click, a holder not handed the turn) reads and
writes at once, as it always did; only the turn's reads are taught to the next one.

The turn's *reads* need no round trip of their own either, most of the time: the keys a
turn reads (its conversation, the asker's identity in the cache, the memory's change
counter, the thread's transcript) name the asker as the user resolver names them, which the
queue cannot know when the turn is recorded - but the asker's previous turn knew them. So
the completion script notes which keys the turn's stores read (``reads``: at most
``MAX_READS``), under the turn's owner, with the turn's ordering key replaced by ``MARK``
wherever it appears in one (a conversation is named by its thread); the script that starts
the asker's next turn (the enqueue that hands it to a worker, or ``begin``) reads those
keys, with that turn's ordering key in place of the mark, and hands their values to the
turn (``read_ahead``: a string, a list, or ``None`` for a key that did not exist).

A store takes a value only for the exact key it would read (anyone else, a resolver that
names people differently, a value grown past ``READ_AHEAD_BYTES`` or ``READ_AHEAD_ITEMS``:
a read of its own, as before), once, and never after the turn wrote that key itself. The
value is as fresh as a read made as the turn started: the earlier turns of its ordering
key completed before it, with their writes, and anything else writing those keys could as
well have written just after the store's own read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Self, TypeVar

if TYPE_CHECKING:
    from redis.asyncio import Redis

COMMIT_LUA = """
local function commit(key, index, body, id, at, ttl)
  ttl = tonumber(ttl)
  if ttl > 0 then redis.call('SET', key, body, 'EX', ttl) else redis.call('SET', key, body) end
  redis.call('ZADD', index, at, id)
  if ttl > 0 then redis.call('EXPIRE', index, ttl) else redis.call('PERSIST', index) end
end
"""
"""Lua: ``commit`` writes a conversation (body, index entry, expiry; ``ttl`` 0 keeps it)."""

STAGED_LUA = (
    COMMIT_LUA
    + """
-- a turn's staged writes (``Staged.keys_and_arguments``): keys from KEYS[k], arguments from
-- ARGV[a] (commits, appends, then four per commit and three plus the items per append);
-- returns the index of the first argument after them
local function staged_writes(k, a)
  local commits, appends = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  for _ = 1, commits do
    commit(KEYS[k], KEYS[k + 1], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
    k, a = k + 2, a + 4
  end
  for _ = 1, appends do
    local count, keep, ttl = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    redis.call('RPUSH', KEYS[k], unpack(ARGV, a + 3, a + 2 + count))
    redis.call('LTRIM', KEYS[k], -keep, -1)
    if ttl > 0 then redis.call('PEXPIRE', KEYS[k], ttl) else redis.call('PERSIST', KEYS[k]) end
    k, a = k + 1, a + 3 + count
  end
  return a
end
"""
)
"""Lua: ``staged_writes`` writes what a turn staged (its commits, then its appends)."""

MAX_READS = 8
"""Keys one turn's reads teach the asker's next turn."""
READ_AHEAD_BYTES = 256 * 1024
"""A string larger than this is not read ahead (it would lengthen the enqueue, before the
platform's ack): the store reads it itself."""
READ_AHEAD_ITEMS = 1000
"""Nor is a list longer than this."""
MARK = "\x00"
"""Stands for the turn's ordering key in the keys a turn taught the next one."""

Value = str | list[str] | None
"""A value read ahead: a string, a list's items, or ``None`` (no such key)."""


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


class Append(NamedTuple):
    """Items pushed onto a bounded log: ``RPUSH``, keep the last ``keep``, expire in
    ``ttl_ms`` (0: never)."""

    key: str
    items: list[str]
    keep: int
    ttl_ms: int

    @property
    def arguments(self) -> list[Any]:
        return [len(self.items), self.keep, self.ttl_ms, *self.items]


class Staged(NamedTuple):
    """What a turn staged, as one script writes it (``STAGED_LUA``).

    >>> Staged([], [Append("log", ["a"], 60, 0)]).keys_and_arguments()
    (['log'], [0, 1, 1, 60, 0, 'a'])
    """

    commits: list[Commit]
    appends: list[Append]

    def keys_and_arguments(self) -> tuple[list[str], list[Any]]:
        keys = [key for commit in self.commits for key in (commit.key, commit.index_key)]
        keys += [append.key for append in self.appends]
        arguments: list[Any] = [len(self.commits), len(self.appends)]
        arguments += [argument for commit in self.commits for argument in commit.arguments]
        arguments += [argument for append in self.appends for argument in append.arguments]
        return keys, arguments


NOTHING = Staged([], [])


class TurnWrites:
    """What a turn staged (the latest commit per conversation, its appends) and the values
    read ahead for it, for one Redis client.

    >>> from agent_core.state.redis_client import connect_redis
    >>> writes = TurnWrites(connect_redis("redis://127.0.0.1:6379/0"), {"k": "v", "log": []})
    >>> writes.read("k"), writes.read("k"), writes.append("log", ["a"], keep=60, ttl_ms=0)
    ((True, 'v'), (False, None), ['a'])
    >>> writes.reads, writes.staged().appends
    (['k', 'log'], [Append(key='log', items=['a'], keep=60, ttl_ms=0)])
    """

    __slots__ = ("appends", "commits", "open", "read_ahead", "reads", "redis")

    def __init__(self, redis: Redis, read_ahead: Mapping[str, Value] | None = None) -> None:
        self.redis = redis
        self.commits: dict[str, Commit] = {}
        self.appends: list[Append] = []
        self.read_ahead = dict(read_ahead or {})
        self.reads: list[str] = []
        """The keys the turn's stores read, in order (taught to the next turn)."""
        self.open = True
        """False once the turn is over (``close``)."""

    def close(self) -> None:
        """The turn is over: a task it started that writes later writes at once."""
        self.open = False

    def _note(self, key: str) -> None:
        if key not in self.reads and len(self.reads) < MAX_READS:
            self.reads.append(key)

    def read(self, key: str) -> tuple[bool, str | None]:
        """A store reads the string ``key``: ``(True, value)`` when it was read ahead (once:
        a second read goes to Redis), else ``(False, None)``. Either way the key is noted."""
        self._note(key)
        value = self.read_ahead.get(key, [])
        if isinstance(value, list):  # not read ahead (or not a string)
            return False, None
        del self.read_ahead[key]
        return True, value

    def append(self, key: str, items: list[str], *, keep: int, ttl_ms: int) -> list[str] | None:
        """A store appends ``items`` to the log ``key`` and reads it: the log as it is now,
        the append staged for the turn's next write, when the log was read ahead; else
        ``None`` (the store writes and reads it itself). The key is noted either way."""
        self._note(key)
        log = self.read_ahead.get(key, "")
        if log is None:
            log = []
        if not isinstance(log, list):
            return None
        log = [*log, *items][-keep:] if keep > 0 else []
        self.read_ahead[key] = log
        if items:
            self.appends.append(Append(key, list(items), keep, ttl_ms))
        return list(log)

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

    def staged(self) -> Staged:
        return Staged(list(self.commits.values()), list(self.appends))

    def written(self, staged: Staged) -> None:
        """``staged`` reached Redis: forget it (a commit staged again since is kept)."""
        for commit in staged.commits:
            if self.commits.get(commit.key) is commit:
                del self.commits[commit.key]
        done = set(map(id, staged.appends))
        self.appends = [append for append in self.appends if id(append) not in done]


class TurnBound:
    """A Redis store that one running turn can be handed: ``for_turn(writes)`` is a view of
    the store (sharing everything it holds) whose reads take what was read ahead for the
    turn and whose conversation commits and log appends are staged in ``writes``, until the
    turn is over (``TurnWrites.close``: then it writes at once, as the store itself does).
    The store itself, and a view for no writes or for another Redis, never stage."""

    _redis: Redis
    _turn: TurnWrites | None = None

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This store as the turn whose writes are ``writes`` uses it (see the class)."""
        if writes is None or writes.redis is not self._redis:
            return self
        view = copy.copy(self)
        view._turn = writes
        return view

    @property
    def _staging(self) -> TurnWrites | None:
        """The turn's writes while it runs, else None."""
        turn = self._turn
        return turn if turn is not None and turn.open else None


class ForTurn(Protocol):
    """What a running turn can be handed (a store, a resolver, anything holding a store)."""

    def for_turn(self, writes: TurnWrites | None) -> Self: ...


H = TypeVar("H")


def turn_view(holder: H, writes: TurnWrites | None, attribute: str) -> H:
    """``holder`` as the running turn uses it: a copy whose ``attribute`` (a store, or
    anything with ``for_turn``; or None) is the turn's view of it; ``holder`` itself when
    that view is the same object (off Redis, or no turn). The copy shares everything else
    the holder holds, so only a holder that never assigns its own attributes after it is
    built (its caches are mutated in place) is viewed this way.

    >>> from agent_core.state.keyvalue import MemoryKeyValueStore
    >>> class Places:
    ...     def __init__(self, cache): self._cache = cache
    >>> places = Places(MemoryKeyValueStore())
    >>> turn_view(places, None, "_cache") is places
    True
    """
    held: ForTurn | None = getattr(holder, attribute)
    bound = None if held is None else held.for_turn(writes)
    if bound is held:
        return holder
    view = copy.copy(holder)
    setattr(view, attribute, bound)
    return view
