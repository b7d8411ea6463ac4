"""``RedisTurnQueue``: turns in a Redis Stream with a consumer group, shared by N processes.

Layout (``P`` = ``key_prefix``; every key carries the hash tag ``{turns}``)::

    P{turns}:stream          the stream; group "workers"; an entry = thread, payload, at
    P{turns}:seen:<key>      delivery dedupe keys (SET NX PX, with the XADD in one script;
                             a ``Flag`` of the state's cache too, when given)
    P{turns}:thread:<T>      list of the thread's unfinished entry ids, oldest first
    P{turns}:progress:<id>   hash: what runs of the turn recorded, and its attempt count
    P{turns}:reads:<owner>   the keys the owner's last turn read, as JSON (read ahead for
                             their next turn: ``turn_writes``)
    P{turns}:stop            pub/sub channel of stop requests (every worker listens)
    P{turns}:begun           pub/sub channel of turns the completion of their thread's
                             previous turn started for the worker holding them (``begun``)

A worker owns an entry while it is in the group's pending list under its name: it renews
by ``XCLAIM ... JUSTID`` (resetting the idle time), others take it over with
``XAUTOCLAIM`` once it has been idle for ``claim_after``. Completion is one script: XACK,
XDEL, drop it from its thread, forget its progress.

**Handed over where it was recorded.** A turn recorded in a process whose worker has a
free slot (``attach``) is delivered to that worker by the enqueue script itself, and
started there when it is first in its thread: the turn costs no fetch and no ``begin``.
A turn recorded while nothing older waits undelivered only: the group's order is kept, and
a busy process leaves its turns to whichever worker fetches first. A turn that waits,
delivered, for an earlier turn of its thread is started by that turn's completion, which
announces it to the worker holding it (``begun``): under a burst, where a thread's next
question arrives while its answer is still being completed, no worker asks ``begin`` (it
does when it missed the announcement, and gets the same start). The scripts are in
``turns_redis_scripts``; a quiet thread's turn costs the enqueue, its progress record and
its completion (``benchmarks/redis_round_trips.py``). The enqueue, which the platform's ack
waits on, goes through a ``ScriptLine`` (``redis_line``: one held connection, and the
enqueues made while one is in flight share the next round trip).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from agent_core.clock import SYSTEM_CLOCK
from agent_core.state import turns_redis_scripts as lua
from agent_core.state.health import StateHealth
from agent_core.state.keyvalue import Flag, encode
from agent_core.state.keyvalue_redis import RedisKeyValueStore, milliseconds
from agent_core.state.quotas_redis import unconsumed_hits
from agent_core.state.redis_client import (
    cancellations,
    redis_boundary,
    redis_health,
    restore_lost_cancellation,
    translated_errors,
)
from agent_core.state.redis_line import ScriptLine
from agent_core.state.turn_backend import (
    Begun,
    Delivery,
    Intake,
    Intakes,
    Readiness,
    Start,
    StopRequest,
)
from agent_core.state.turn_writes import (
    NOTHING,
    READ_AHEAD_BYTES,
    READ_AHEAD_ITEMS,
    TurnWrites,
    Value,
)
from agent_core.state.turns import TurnQueue

if TYPE_CHECKING:
    from redis.asyncio import Redis

GROUP = "workers"
KEEP_SECONDS = 7 * 86400
"""How long thread lists, progress and what a thread's turns read outlive their last use."""


class RedisTurnQueue(TurnQueue):
    """The multi-process turn queue; see the module docstring for the layout.

    >>> from agent_core.state.redis_client import connect_redis
    >>> queue = RedisTurnQueue(connect_redis("redis://127.0.0.1:6379/0"), claim_after=30)
    >>> queue.stream_key, queue.hands_over
    ('threadline:{turns}:stream', True)
    """

    hands_over = True
    announces_starts = True

    def __init__(
        self, redis: Redis, *, key_prefix: str = "threadline:", claim_after: float = 30.0
    ) -> None:
        super().__init__(claim_after=claim_after)
        self._redis = redis
        self._base = f"{key_prefix}{{turns}}:"
        self.stream_key = self._base + "stream"
        self._intakes = Intakes()
        self._enqueue = ScriptLine(redis, lua.ENQUEUE)
        self._begin = ScriptLine(redis, lua.BEGIN)
        self._renew = redis.register_script(lua.RENEW)
        self._complete = ScriptLine(redis, lua.COMPLETE)
        self._save_progress = ScriptLine(redis, lua.SAVE_PROGRESS)

    def _thread_key(self, thread_key: str) -> str:
        return f"{self._base}thread:{thread_key}"

    def _progress_key(self, turn_id: str) -> str:
        return f"{self._base}progress:{turn_id}"

    def _reads_key(self, owner: str | None) -> str:
        """What the owner's last turn read (no owner: a key nothing writes)."""
        return f"{self._base}reads:{owner}" if owner else f"{self._base}reads"

    def attach(self, intake: Intake) -> contextlib.AbstractContextManager[object]:
        """Hand turns recorded in this process to ``intake`` while the block runs."""
        return self._intakes.attached(intake)

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
        keys.append(self._reads_key(owner))
        recorded, at = encode(payload), repr(SYSTEM_CLOCK.now())
        args: list[str | int] = [
            "1" if dedupe_key is not None else "0",
            max(1, math.ceil(dedupe_ttl * 1000)),
            thread_key,
            recorded,
            at,
            KEEP_SECONDS,
            owner or "",
            "",
            GROUP,
            self._base + "progress:",
            READ_AHEAD_BYTES,
            READ_AHEAD_ITEMS,
        ]
        first = ""
        if flag is not None:
            store = flag.store
            if isinstance(store, RedisKeyValueStore) and store.shares(self._redis):
                first = "" if flag.first_payload is None else encode(flag.first_payload)
                keys.append(store.key(flag.key))
                args += [encode(flag.value), milliseconds(flag.ttl) or 0, first]
            else:  # another back end: added just before
                recorded = encode(flag.payload(payload) if await flag.add() else payload)
                args[3] = recorded
        intake = self._intakes.reserve(owner)
        if intake is not None:
            args[7] = intake.consumer
        try:
            reply = await self._enqueue(keys, args)
        except BaseException:
            if intake is not None:
                intake.unreserve(owner)
            raise
        if flag is not None and len(keys) == 5:
            flag.added = bool(reply and int(reply[1]))
            recorded = first if flag.added and first else recorded
        if intake is not None:
            self._hand_over(intake, reply, thread_key, recorded, at, owner)
        return None if not reply else str(reply[0])

    @staticmethod
    def _hand_over(
        intake: Intake, reply: Any, thread_key: str, payload: str, at: str, owner: str | None
    ) -> None:
        """Give ``intake`` the turn the enqueue script delivered to it (its slot back when the
        script did not: a duplicate, an older turn waiting, no consumer group yet)."""
        handed = int(reply[2]) if reply else 0
        if handed == 0:
            intake.unreserve(owner)
            return
        delivery = Delivery(str(reply[0]), thread_key, json.loads(payload), float(at), owner)
        intake.take(delivery, _started(*reply[3:6]) if handed == 2 else None)

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
        keys += [self._progress_key(delivery.id), self._reads_key(delivery.owner)]
        arguments: list[str | int] = [GROUP, delivery.id, consumer, KEEP_SECONDS]
        arguments += [delivery.thread_key, READ_AHEAD_BYTES, READ_AHEAD_ITEMS]
        reply = await self._begin(keys, arguments)
        if reply[0] == 1:
            return Start(Readiness.WAIT)
        if reply[0] == 2:
            return Start(Readiness.GONE)
        return _started(reply[1], reply[2], reply[3])

    @redis_boundary
    async def renew(self, delivery: Delivery, consumer: str) -> bool:
        return bool(await self._renew([self.stream_key], [GROUP, delivery.id, consumer]))

    def turn_writes(self, read_ahead: Mapping[str, Value] | None = None) -> TurnWrites:
        """The turn's writes, staged for its next script, and what was read as it started,
        offered to its stores (``turn_writes``)."""
        return TurnWrites(self._redis, read_ahead)

    @redis_boundary
    async def save_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        if not progress:
            return
        fields = [part for name, value in progress.items() for part in (name, encode(value))]
        staged = writes.staged() if writes is not None else NOTHING
        keys, arguments = staged.keys_and_arguments()
        await self._save_progress(
            [self._progress_key(delivery.id), *keys], [KEEP_SECONDS, *arguments, *fields]
        )
        if writes is not None:
            writes.written(staged)

    async def save_final_progress(
        self, delivery: Delivery, progress: dict[str, Any], writes: TurnWrites | None = None
    ) -> None:
        """While a worker runs the turn (``writes``), nothing to write: the completion script
        writes the turn's staged conversation commit and completes it in one step, so a
        completed turn is the answered one (and completion forgets the progress anyway)."""
        if writes is None:
            await self.save_progress(delivery, progress)

    @redis_boundary
    async def complete(
        self, delivery: Delivery, consumer: str, writes: TurnWrites | None = None
    ) -> bool:
        staged = writes.staged() if writes is not None else NOTHING
        reads = ""
        if writes is not None and writes.reads and delivery.owner:
            reads = encode(writes.taught(delivery.thread_key))
        keys, arguments = staged.keys_and_arguments()
        keys = [
            self.stream_key,
            self._thread_key(delivery.thread_key),
            self._progress_key(delivery.id),
            self._reads_key(delivery.owner),
            *keys,
        ]
        head: list[str | int] = [GROUP, delivery.id, consumer, reads, KEEP_SECONDS, self._base]
        untaken = unconsumed_hits(writes.read_ahead) if writes is not None else []
        head += [READ_AHEAD_BYTES, READ_AHEAD_ITEMS, len(untaken) // 2, *untaken]
        done = bool(await self._complete(keys, [*head, *arguments]))
        if writes is not None and done:
            writes.written(staged)
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

    async def begun(self, consumer: str) -> AsyncIterator[Begun]:
        before = cancellations()
        async with translated_errors(), self._redis.pubsub() as pubsub:
            await pubsub.subscribe(self._base + "begun")
            async for message in pubsub.listen():
                restore_lost_cancellation(before)
                if message.get("type") == "message":
                    turn_id, to, attempt, progress, found = json.loads(message["data"])
                    if to == consumer:
                        yield Begun(str(turn_id), _started(attempt, progress, found))

    @redis_boundary
    async def pending(self) -> int:
        return int(await self._redis.xlen(self.stream_key))

    async def health(self) -> StateHealth:
        return await redis_health(self._redis)


def _started(attempt: Any, progress: Any, found: Any) -> Start:
    """A script's start of a turn: its attempt, its recorded progress (a flat hash) and what
    was read ahead for it (flat key, value pairs; a key that did not exist: ``None``, or
    ``False`` and the lists ``{}`` when announced as JSON, ``BEGUN``)."""
    progress, found = progress or [], found or []
    recorded = {
        str(progress[i]): json.loads(progress[i + 1])
        for i in range(0, len(progress), 2)
        if progress[i] != "_attempt"
    }
    read_ahead = {str(found[i]): _value(found[i + 1]) for i in range(0, len(found), 2)}
    return Start(Readiness.RUN, int(attempt), recorded, read_ahead)


def _value(read: Any) -> Value:
    """A value read ahead, as a script's reply or its JSON announcement carries it."""
    if read is None or read is False:
        return None
    return read if isinstance(read, str) else list(read or [])
