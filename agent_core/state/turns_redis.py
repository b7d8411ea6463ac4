"""``RedisTurnQueue``: turns in a Redis Stream with a consumer group, shared by N processes.

Layout (``P`` = ``key_prefix``; every key carries the hash tag ``{turns}``)::

    P{turns}:stream          the stream; group "workers"; an entry = thread, payload, at
    P{turns}:seen:<key>      delivery dedupe keys (SET NX PX, with the XADD in one script;
                             a ``Flag`` of the state's cache too, when given)
    P{turns}:thread:<T>      list of the thread's unfinished entry ids, oldest first
    P{turns}:progress:<id>   hash: what runs of the turn recorded, and its attempt count
    P{turns}:stop            pub/sub channel of stop requests (every worker listens)

A worker owns an entry while it is in the group's pending list under its name: it renews
by ``XCLAIM ... JUSTID`` (resetting the idle time), others take it over with
``XAUTOCLAIM`` once it has been idle for ``claim_after``. Completion is one script: XACK,
XDEL, drop it from its thread, forget its progress.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag, encode
from agent_core.state.keyvalue_redis import RedisKeyValueStore, milliseconds
from agent_core.state.redis_client import (
    cancellations,
    redis_boundary,
    redis_health,
    restore_lost_cancellation,
    translated_errors,
)
from agent_core.state.turn_backend import Delivery, Readiness, Start, StopRequest
from agent_core.state.turn_writes import (
    COMMIT_LUA,
    collecting,
    keys_and_arguments,
    staging_for,
)
from agent_core.state.turns import TurnQueue

if TYPE_CHECKING:
    from redis.asyncio import Redis

GROUP = "workers"
KEEP_SECONDS = 7 * 86400
"""How long thread lists and progress outlive their last use (a stalled queue's safety net)."""

_OWNED = """
local function owned(stream, id, consumer)
  local p = redis.pcall('XPENDING', stream, ARGV[1], id, id, 1)
  return type(p) == 'table' and not p.err and #p == 1 and p[1][2] == consumer
end
"""

# KEYS: stream, seen, thread list[, flag]. ARGV: dedupe?, dedupe ttl ms, thread, payload, at,
# keep, owner[, flag value, flag ttl ms (0: none), payload when the flag is added ('': same)]
# -> false (a duplicate) | {id, 1 when the flag was added}
_ENQUEUE = """
if ARGV[1] == '1' and not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  return false
end
local payload, added = ARGV[4], 0
if KEYS[4] then
  local set
  if ARGV[9] == '0' then
    set = redis.call('SET', KEYS[4], ARGV[8], 'NX')
  else
    set = redis.call('SET', KEYS[4], ARGV[8], 'NX', 'PX', ARGV[9])
  end
  if set then
    added = 1
    if ARGV[10] ~= '' then payload = ARGV[10] end
  end
end
local id = redis.call('XADD', KEYS[1], '*', 'thread', ARGV[3], 'payload', payload, 'at', ARGV[5],
                     'owner', ARGV[7])
redis.call('RPUSH', KEYS[3], id)
redis.call('EXPIRE', KEYS[3], ARGV[6])
return {id, added}
"""

# KEYS: stream, thread list, progress. ARGV: group, id, consumer, keep
# -> {0, attempt, progress...} run | {1} wait | {2} gone
_BEGIN = (
    _OWNED
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return {2} end
while true do
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head or head == ARGV[2] then break end
  if #redis.call('XRANGE', KEYS[1], head, head) > 0 then return {1} end
  redis.call('LPOP', KEYS[2])  -- a head whose entry no longer exists cannot block the thread
end
local attempt = redis.call('HINCRBY', KEYS[3], '_attempt', 1)
redis.call('EXPIRE', KEYS[3], ARGV[4])
return {0, attempt, redis.call('HGETALL', KEYS[3])}
"""
)

# KEYS: stream. ARGV: group, id, consumer
_RENEW = (
    _OWNED
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
"""
)

# KEYS: progress, then two per commit. ARGV: keep, commits, their arguments (four each),
# then the fields. One round trip: the fields, the record's expiry and the turn's staged
# conversation commits (``turn_writes``).
_SAVE_PROGRESS = (
    COMMIT_LUA
    + """
local n = tonumber(ARGV[2])
commits(2, 3, n)
redis.call('HSET', KEYS[1], unpack(ARGV, 3 + 4 * n))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""
)

# KEYS: stream, thread list, progress, then two per commit. ARGV: group, id, consumer,
# commits, their arguments (four each). The staged commits are written only by the owner.
_COMPLETE = (
    _OWNED
    + COMMIT_LUA
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return 0 end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('LREM', KEYS[2], 1, ARGV[2])
redis.call('DEL', KEYS[3])
commits(4, 5, tonumber(ARGV[4]))
return 1
"""
)


class RedisTurnQueue(TurnQueue):
    """The multi-process turn queue; see the module docstring for the layout.

    >>> from agent_core.state.redis_client import connect_redis
    >>> queue = RedisTurnQueue(connect_redis("redis://127.0.0.1:6379/0"), claim_after=30)
    >>> queue.stream_key
    'threadline:{turns}:stream'
    """

    def __init__(
        self, redis: Redis, *, key_prefix: str = "threadline:", claim_after: float = 30.0
    ) -> None:
        super().__init__(claim_after=claim_after)
        self._redis = redis
        self._base = f"{key_prefix}{{turns}}:"
        self.stream_key = self._base + "stream"
        self._enqueue = redis.register_script(_ENQUEUE)
        self._begin = redis.register_script(_BEGIN)
        self._renew = redis.register_script(_RENEW)
        self._complete = redis.register_script(_COMPLETE)
        self._save_progress = redis.register_script(_SAVE_PROGRESS)

    def _thread_key(self, thread_key: str) -> str:
        return f"{self._base}thread:{thread_key}"

    def _progress_key(self, turn_id: str) -> str:
        return f"{self._base}progress:{turn_id}"

    @redis_boundary
    async def enqueue(
        self,
        thread_key: str,
        payload: dict[str, Any],
        *,
        dedupe_key: str | None = None,
        dedupe_ttl: float = 3600.0,
        owner: str | None = None,
        flag: Flag | None = None,
    ) -> str | None:
        keys = [self.stream_key, f"{self._base}seen:{dedupe_key}", self._thread_key(thread_key)]
        args = [
            "1" if dedupe_key is not None else "0",
            max(1, math.ceil(dedupe_ttl * 1000)),
            thread_key,
            encode(payload),
            repr(time.time()),
            KEEP_SECONDS,
            owner or "",
        ]
        if flag is not None:
            store = flag.store
            if isinstance(store, RedisKeyValueStore) and store.shares(self._redis):
                first = "" if flag.first_payload is None else encode(flag.first_payload)
                keys.append(store.key(flag.key))
                args += [encode(flag.value), milliseconds(flag.ttl) or 0, first]
            else:  # another back end: added just before
                args[3] = encode(flag.payload(payload) if await flag.add() else payload)
        reply = await self._enqueue(keys, args)
        if flag is not None and len(keys) == 4:
            flag.added = bool(reply and int(reply[1]))
        return None if not reply else str(reply[0])

    async def _ensure_group(self) -> None:
        from redis.exceptions import ResponseError

        try:
            await self._redis.xgroup_create(self.stream_key, GROUP, id="0", mkstream=True)
        except ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    @staticmethod
    def _delivery(entry_id: str, fields: dict[str, str]) -> Delivery:
        payload, owner = json.loads(fields["payload"]), fields.get("owner") or None
        return Delivery(entry_id, fields["thread"], payload, float(fields["at"]), owner)

    @redis_boundary
    async def fetch(self, consumer: str, count: int, timeout: float) -> list[Delivery]:
        from redis.exceptions import ResponseError

        block = max(1, int(timeout * 1000))
        streams: dict[Any, Any] = {self.stream_key: ">"}
        found: Any
        try:
            found = await self._redis.xreadgroup(GROUP, consumer, streams, count, block)
        except ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            await self._ensure_group()  # first start, or Redis came back empty
            found = await self._redis.xreadgroup(GROUP, consumer, streams, count, block)
        return [self._delivery(i, f) for _, entries in found or [] for i, f in entries if f]

    @redis_boundary
    async def claim(self, consumer: str, count: int) -> list[Delivery]:
        from redis.exceptions import ResponseError

        idle_ms = max(1, int(self.claim_after * 1000))
        reply: Any
        try:
            reply = await self._redis.xautoclaim(
                self.stream_key, GROUP, consumer, idle_ms, "0-0", count=count
            )
        except ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            await self._ensure_group()
            return []
        return [self._delivery(i, f) for i, f in reply[1] if f]

    @redis_boundary
    async def begin(self, delivery: Delivery, consumer: str) -> Start:
        keys = [self.stream_key, self._thread_key(delivery.thread_key)]
        keys.append(self._progress_key(delivery.id))
        reply = await self._begin(keys, [GROUP, delivery.id, consumer, KEEP_SECONDS])
        if reply[0] == 1:
            return Start(Readiness.WAIT)
        if reply[0] == 2:
            return Start(Readiness.GONE)
        flat = reply[2]
        progress = {
            str(flat[i]): json.loads(flat[i + 1])
            for i in range(0, len(flat), 2)
            if flat[i] != "_attempt"
        }
        return Start(Readiness.RUN, int(reply[1]), progress)

    @redis_boundary
    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        return bool(await self._renew([self.stream_key], [GROUP, delivery.id, consumer]))

    def turn_writes(self) -> contextlib.AbstractContextManager[object]:
        """Stage the turn's conversation commits for its next script (``turn_writes``)."""
        return collecting(self._redis)

    @redis_boundary
    async def save_progress(self, delivery: Delivery, progress: dict[str, Any]) -> None:
        if not progress:
            return
        fields = [part for name, value in progress.items() for part in (name, encode(value))]
        staged = staging_for(self._redis)
        commits = staged.staged() if staged is not None else []
        keys, arguments = keys_and_arguments(commits)
        await self._save_progress(
            [self._progress_key(delivery.id), *keys],
            [KEEP_SECONDS, len(commits), *arguments, *fields],
        )
        if staged is not None:
            staged.written(commits)

    async def save_final_progress(self, delivery: Delivery, progress: dict[str, Any]) -> None:
        """While a worker runs the turn, nothing to write: the completion script writes the
        turn's staged conversation commit and completes it in one step, so a completed turn
        is the answered one (and completion forgets the progress anyway)."""
        if staging_for(self._redis) is None:
            await self.save_progress(delivery, progress)

    @redis_boundary
    async def complete(self, delivery: Delivery, consumer: str) -> bool:
        staged = staging_for(self._redis)
        commits = staged.staged() if staged is not None else []
        keys, arguments = keys_and_arguments(commits)
        keys = [
            self.stream_key,
            self._thread_key(delivery.thread_key),
            self._progress_key(delivery.id),
            *keys,
        ]
        done = bool(
            await self._complete(keys, [GROUP, delivery.id, consumer, len(commits), *arguments])
        )
        if staged is not None and done:
            staged.written(commits)
        return done

    @redis_boundary
    async def request_stop(self, turn_id: str, *, by: str) -> None:
        await self._redis.publish(self._base + "stop", encode([turn_id, by]))

    async def stop_requests(self) -> AsyncIterator[StopRequest]:
        before = cancellations()
        async with translated_errors(), self._redis.pubsub() as pubsub:
            await pubsub.subscribe(self._base + "stop")
            async for message in pubsub.listen():
                restore_lost_cancellation(before)
                if message.get("type") == "message":
                    turn_id, by = json.loads(message["data"])
                    yield StopRequest(str(turn_id), str(by))

    @redis_boundary
    async def pending(self) -> int:
        return int(await self._redis.xlen(self.stream_key))

    async def health(self) -> StateHealth:
        return await redis_health(self._redis)
