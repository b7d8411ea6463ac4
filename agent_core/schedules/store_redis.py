"""``RedisScheduleStore``: schedules shared by every process.

Layout (``P`` = ``key_prefix``; every key carries the hash tag ``{schedules}``)::

    P{schedules}:s:<id>          hash: def (the unchanging JSON), owner, workspace, status,
                                 reason, next_due, alert (and alert_for, alert_before: the
                                 last swap's occurrence and the state before it), last,
                                 notice:<name> (one-time notices)
    P{schedules}:due             sorted set: active schedules by next_due (the dispatcher's;
                                 a leased one by its lease's end)
    P{schedules}:all             sorted set: every schedule by creation (operators' listing)
    P{schedules}:owner:<owner>   set of the owner's ids (the per-person cap)
    P{schedules}:ws:<workspace>  set of the workspace's ids (the per-workspace cap)
    P{schedules}:paused          set of workspaces an admin paused

Every change is one script (caps and insert; the claim's compare and set; the alert's swap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_core.schedules.model import LastRun, Schedule
from agent_core.schedules.store import (
    ScheduleIdTaken,
    ScheduleLimitError,
    ScheduleLimits,
    ScheduleStore,
    assemble,
    definition,
    state_text,
    state_value,
)
from agent_core.state.redis_client import redis_boundary

if TYPE_CHECKING:
    from redis.asyncio import Redis

# KEYS: hash, owner set, workspace set, all, due. ARGV: id, per person, per workspace, def,
# owner, workspace, status, reason, next_due, alert, created_at, notices... -> 1 | 0 (person)
# | -2 (workspace)
_ADD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[3]) then return -2 end
redis.call('HSET', KEYS[1], 'def', ARGV[4], 'owner', ARGV[5], 'workspace', ARGV[6],
           'status', ARGV[7], 'reason', ARGV[8], 'next_due', ARGV[9], 'alert', ARGV[10])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[11], ARGV[1])
if ARGV[7] == 'active' then redis.call('ZADD', KEYS[5], ARGV[9], ARGV[1]) end
for i = 12, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], '1') end
return 1
"""

# KEYS: hash, due, all, owner set, workspace set. ARGV: id
_REMOVE = """
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
return 1
"""

# KEYS: hash, due. ARGV: id, reason -> the hash, or {} when unknown
_PAUSE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
redis.call('HSET', KEYS[1], 'status', 'paused', 'reason', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: hash, due. ARGV: id, next_due -> the hash, or {} when unknown
_RESUME = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
redis.call('HSET', KEYS[1], 'status', 'active', 'reason', '', 'next_due', ARGV[2])
for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(name, 1, 7) == 'notice:' then redis.call('HDEL', KEYS[1], name) end
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: due. ARGV: now, limit, lease end (0: no lease) -> ids; a leased id's score becomes
# its lease end (the hash keeps next_due, the claim's expected value)
_DUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if ARGV[3] ~= '0' then
  for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], id) end
end
return ids
"""

# KEYS: hash, due. ARGV: id, expected, next_due, last ('' keeps it) -> 1 claimed | 0
_ADVANCE = """
local current = redis.call('HGET', KEYS[1], 'next_due')
if not current or tonumber(current) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'next_due', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'last', ARGV[4]) end
if redis.call('HGET', KEYS[1], 'status') == 'active' then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
return 1
"""

# KEYS: hash. ARGV: the last run (nothing when the schedule was removed meanwhile)
_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'last', ARGV[1]) end
return 1
"""

# KEYS: hash. ARGV: state, occurrence -> {0} unknown | {1, state before the occurrence}
_SWAP = """
local state = redis.call('HGET', KEYS[1], 'alert')
if not state then return {0} end
local before = state
if redis.call('HGET', KEYS[1], 'alert_for') == ARGV[2] then
  before = redis.call('HGET', KEYS[1], 'alert_before') or ''
end
redis.call('HSET', KEYS[1], 'alert', ARGV[1], 'alert_for', ARGV[2], 'alert_before', before)
return {1, before}
"""

# KEYS: hash. ARGV: field -> 1 first time | 0
_NOTE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], ARGV[1], '1')
"""


def _schedule(flat: dict[str, str]) -> Schedule | None:
    if "def" not in flat:
        return None  # removed meanwhile
    return assemble(
        flat["def"],
        status=flat.get("status", "active"),
        paused_reason=flat.get("reason"),
        next_due=float(flat["next_due"]),
        alert_state=state_value(flat.get("alert")),
        notices=[name.removeprefix("notice:") for name in flat if name.startswith("notice:")],
        last_run=flat.get("last") or None,
    )


def _pairs(reply: list[Any]) -> dict[str, str]:
    return {str(reply[i]): str(reply[i + 1]) for i in range(0, len(reply), 2)}


def _texts(replies: Any) -> list[str]:
    """Replies as ``str`` (the client decodes them; its types say ``bytes | str``)."""
    return [str(reply) for reply in replies]


class RedisScheduleStore(ScheduleStore):
    """The multi-process store; see the module docstring for the layout.

    >>> from agent_core.state.redis_client import connect_redis
    >>> store = RedisScheduleStore(connect_redis("redis://127.0.0.1:6379/0"))
    >>> store.due_key
    'threadline:{schedules}:due'
    """

    def __init__(self, redis: Redis, *, key_prefix: str = "threadline:") -> None:
        self._redis = redis
        self._base = f"{key_prefix}{{schedules}}:"
        self.due_key = self._base + "due"
        self._all = self._base + "all"
        self._paused = self._base + "paused"
        self._add = redis.register_script(_ADD)
        self._remove = redis.register_script(_REMOVE)
        self._pause = redis.register_script(_PAUSE)
        self._resume = redis.register_script(_RESUME)
        self._due = redis.register_script(_DUE)
        self._advance = redis.register_script(_ADVANCE)
        self._record = redis.register_script(_RECORD)
        self._swap = redis.register_script(_SWAP)
        self._note = redis.register_script(_NOTE)

    def _hash(self, schedule_id: str) -> str:
        return f"{self._base}s:{schedule_id}"

    def _owner(self, owner: str) -> str:
        return f"{self._base}owner:{owner}"

    def _workspace(self, workspace: str) -> str:
        return f"{self._base}ws:{workspace}"

    @redis_boundary
    async def add(self, schedule: Schedule, *, limits: ScheduleLimits) -> None:
        keys = [
            self._hash(schedule.id),
            self._owner(schedule.owner),
            self._workspace(schedule.workspace),
            self._all,
            self.due_key,
        ]
        args: list[str | int] = [
            schedule.id,
            limits.per_person,
            limits.per_workspace,
            definition(schedule),
            schedule.owner,
            schedule.workspace,
            schedule.status,
            schedule.paused_reason or "",
            repr(schedule.next_due),
            state_text(schedule.alert_state),
            repr(schedule.created_at),
            *(f"notice:{notice}" for notice in sorted(schedule.notices)),
        ]
        match int(await self._add(keys, args)):
            case 0:
                raise ScheduleLimitError("person", limits.per_person)
            case -2:
                raise ScheduleLimitError("workspace", limits.per_workspace)
            case -1:
                raise ScheduleIdTaken(f"schedule {schedule.id} exists")

    async def _load(self, ids: list[str]) -> list[Schedule]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for schedule_id in ids:
                pipe.hgetall(self._hash(schedule_id))
            replies = await pipe.execute()
        return [s for s in map(_schedule, replies) if s is not None]

    @redis_boundary
    async def get(self, schedule_id: str) -> Schedule | None:
        found: Any = await self._redis.hgetall(self._hash(schedule_id))
        return _schedule(found)

    async def _members(self, key: str) -> list[Schedule]:
        ids = sorted(_texts(await self._redis.smembers(key)))
        return sorted(await self._load(ids), key=lambda s: (s.created_at, s.id))

    @redis_boundary
    async def owned_by(self, owner: str) -> list[Schedule]:
        return await self._members(self._owner(owner))

    @redis_boundary
    async def in_workspace(self, workspace: str) -> list[Schedule]:
        return await self._members(self._workspace(workspace))

    @redis_boundary
    async def every(self, *, limit: int = 10_000) -> list[Schedule]:
        return await self._load(_texts(await self._redis.zrange(self._all, 0, limit - 1)))

    @redis_boundary
    async def remove(self, schedule_id: str) -> bool:
        found = await self._redis.hmget(self._hash(schedule_id), "owner", "workspace")
        if None in found:
            return False
        owner, workspace = _texts(found)
        keys = [
            self._hash(schedule_id),
            self.due_key,
            self._all,
            self._owner(owner),
            self._workspace(workspace),
        ]
        return bool(await self._remove(keys, [schedule_id]))

    @redis_boundary
    async def pause(self, schedule_id: str, reason: str) -> Schedule | None:
        reply = await self._pause([self._hash(schedule_id), self.due_key], [schedule_id, reason])
        return _schedule(_pairs(reply))

    @redis_boundary
    async def resume(self, schedule_id: str, next_due: float) -> Schedule | None:
        keys = [self._hash(schedule_id), self.due_key]
        return _schedule(_pairs(await self._resume(keys, [schedule_id, repr(next_due)])))

    @redis_boundary
    async def due(self, now: float, *, limit: int, lease: float = 0.0) -> list[Schedule]:
        lease_end = repr(now + lease) if lease > 0 else "0"
        ids = await self._due([self.due_key], [repr(now), limit, lease_end])
        found = await self._load(_texts(ids))
        return sorted(found, key=lambda s: (s.next_due, s.id))

    @redis_boundary
    async def advance(
        self, schedule_id: str, *, expected: float, next_due: float, last_run: LastRun | None
    ) -> bool:
        last = "" if last_run is None else last_run.model_dump_json()
        keys = [self._hash(schedule_id), self.due_key]
        args = [schedule_id, repr(expected), repr(next_due), last]
        return bool(await self._advance(keys, args))

    @redis_boundary
    async def record_run(self, schedule_id: str, last_run: LastRun) -> None:
        await self._record([self._hash(schedule_id)], [last_run.model_dump_json()])

    @redis_boundary
    async def swap_alert_state(
        self, schedule_id: str, holds: bool, *, occurrence: str
    ) -> bool | None:
        reply = await self._swap([self._hash(schedule_id)], [state_text(holds), occurrence])
        return state_value(str(reply[1])) if int(reply[0]) else None

    @redis_boundary
    async def note_once(self, schedule_id: str, notice: str) -> bool:
        return bool(await self._note([self._hash(schedule_id)], [f"notice:{notice}"]))

    @redis_boundary
    async def forget_notice(self, schedule_id: str, notice: str) -> None:
        await self._redis.hdel(self._hash(schedule_id), f"notice:{notice}")

    @redis_boundary
    async def pause_workspace(self, workspace: str, paused: bool) -> None:
        if paused:
            await self._redis.sadd(self._paused, workspace)
        else:
            await self._redis.srem(self._paused, workspace)

    @redis_boundary
    async def paused_workspaces(self) -> frozenset[str]:
        return frozenset(_texts(await self._redis.smembers(self._paused)))

    @redis_boundary
    async def earliest_due(self) -> float | None:
        first = await self._redis.zrange(self.due_key, 0, 0, withscores=True)
        return float(first[0][1]) if first else None
