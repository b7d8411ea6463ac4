"""Lua scripts of ``RedisTurnQueue``: each step of a turn is one atomic script.

A turn's life in round trips: ``ENQUEUE`` records it (dedupe key, flag, stream entry,
thread list) and, when a worker of the recording process has a free slot and the turn is
the group's next undelivered entry, delivers it to that worker in the same step and starts
it if it is first in its thread (``STARTED``: its attempt counted, its progress and the
keys its asker's last turn read, read ahead). Otherwise a worker's ``XREADGROUP``
fetches it and ``BEGIN`` starts it. ``SAVE_PROGRESS`` records what a run posted;
``COMPLETE`` ends it, writes its staged conversation commits, notes the keys it read for
the next turn (``agent_core.state.turn_writes``) and starts the thread's next turn when it
waits delivered to a worker (``BEGUN``: under a burst a thread's next question arrives
while its answer is still being completed, so the worker holding it never asks ``BEGIN``).

The keys read ahead are named by data (the reads a turn made), not passed as ``KEYS``: like
the turn's conversation commits, these scripts span key slots, so they run on one Redis
server, not a cluster.
"""

from __future__ import annotations

from agent_core.state.quotas_redis import HIT_LUA
from agent_core.state.turn_writes import STAGED_LUA

OWNED = """
local function owned(stream, id, consumer)
  local p = redis.pcall('XPENDING', stream, ARGV[1], id, id, 1)
  return type(p) == 'table' and not p.err and #p == 1 and p[1][2] == consumer
end
"""

FIRST_IN_THREAD = """
local function first_in_thread(stream, thread, id)
  while true do
    local head = redis.call('LINDEX', thread, 0)
    if not head or head == id then return true end
    if #redis.call('XRANGE', stream, head, head) > 0 then return false end
    redis.call('LPOP', thread)  -- a head whose entry no longer exists cannot block the thread
  end
end
"""

# The run counts as an attempt; the keys its owner's last turn read are read ahead, each
# with the turn's ordering key in place of the mark (``turn_writes.MARK``): a string, or a
# list's items, of at most ARGV[limit] bytes or ARGV[limit + 1] items (another key, or a
# larger value, is skipped: the store reads it itself). A quota hit it made
# (``quotas_redis.hit_template``) is made, as the hit of this start (``member``: the
# progress key and the attempt, so a start read again is not counted twice), its value
# "allowed remaining retry-ms member".
STARTED = (
    HIT_LUA
    + """
local function expanded(template, turn)
  local at = string.find(template, '\\0', 1, true)
  if not at then return template end
  return string.sub(template, 1, at - 1) .. turn .. string.sub(template, at + 1)
end
local function value_of(key, bytes, items)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return true, false end
  if kind == 'string' and redis.call('STRLEN', key) <= bytes then
    return true, redis.call('GET', key)
  end
  if kind == 'list' and redis.call('LLEN', key) <= items then
    return true, redis.call('LRANGE', key, 0, -1)
  end
  return false, nil
end
local function hit_of(template, member)
  local limit, window, key = string.match(template, '^\\1(%d+)\\1(%d+)\\1(.+)$')
  if not key then return false, nil end
  local made = quota_hit(key, tonumber(limit), tonumber(window), member)
  return true, table.concat({made[1], made[2], made[3], member}, ' ')
end
local function read_ahead(reads, turn, bytes, items, member)
  local found = {}
  local ok, templates = pcall(cjson.decode, redis.call('GET', reads) or '[]')
  if ok and type(templates) == 'table' then
    for _, template in ipairs(templates) do
      local key = expanded(tostring(template), turn)
      local readable, value
      if string.byte(key, 1) == 1 then
        readable, value = hit_of(key, member)
      else
        readable, value = value_of(key, tonumber(bytes), tonumber(items))
      end
      if readable then
        table.insert(found, key)
        table.insert(found, value)
      end
    end
  end
  return found
end
local function started(progress, keep, reads, turn, bytes, items)
  local attempt = redis.call('HINCRBY', progress, '_attempt', 1)
  redis.call('EXPIRE', progress, keep)
  local found = read_ahead(reads, turn, bytes, items, progress .. '#' .. attempt)
  return attempt, redis.call('HGETALL', progress), found
end
"""
)

# Whether ``id`` is the group's next undelivered entry (nothing older waits for a fetch).
NEXT_UNDELIVERED = """
local function next_undelivered(stream, group, id)
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if type(groups) ~= 'table' or groups.err then return false end
  for _, g in ipairs(groups) do
    local fields = {}
    for i = 1, #g, 2 do fields[g[i]] = g[i + 1] end
    if fields['name'] == group then
      local after = redis.call('XRANGE', stream, '(' .. fields['last-delivered-id'], '+',
                               'COUNT', 1)
      return #after == 1 and after[1][1] == id
    end
  end
  return false
end
"""

# KEYS: stream, seen, thread list, the owner's reads[, flag]. ARGV: dedupe?, dedupe ttl ms,
# thread, payload, at, keep, owner, consumer ('': none here), group, progress key prefix,
# read-ahead limits (bytes, items)[, flag value, flag ttl ms (0: none), payload when the
# flag is added ('': same)]
# -> false (a duplicate) | {id, 1 when the flag was added, handed: 0 no | 1 waits | 2 started
#    [, attempt, progress..., read ahead...]}
ENQUEUE = (
    FIRST_IN_THREAD
    + STARTED
    + NEXT_UNDELIVERED
    + """
if ARGV[1] == '1' and not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  return false
end
local payload, added = ARGV[4], 0
if KEYS[5] then
  local set
  if ARGV[14] == '0' then
    set = redis.call('SET', KEYS[5], ARGV[13], 'NX')
  else
    set = redis.call('SET', KEYS[5], ARGV[13], 'NX', 'PX', ARGV[14])
  end
  if set then
    added = 1
    if ARGV[15] ~= '' then payload = ARGV[15] end
  end
end
local id = redis.call('XADD', KEYS[1], '*', 'thread', ARGV[3], 'payload', payload, 'at', ARGV[5],
                     'owner', ARGV[7])
redis.call('RPUSH', KEYS[3], id)
redis.call('EXPIRE', KEYS[3], ARGV[6])
if ARGV[8] == '' or not next_undelivered(KEYS[1], ARGV[9], id) then return {id, added, 0} end
redis.call('XREADGROUP', 'GROUP', ARGV[9], ARGV[8], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if not first_in_thread(KEYS[1], KEYS[3], id) then return {id, added, 1} end
local attempt, progress, found = started(ARGV[10] .. id, ARGV[6], KEYS[4], ARGV[3], ARGV[11],
                                         ARGV[12])
return {id, added, 2, attempt, progress, found}
"""
)

# KEYS: stream, thread list, progress, the owner's reads. ARGV: group, id, consumer, keep,
# thread, read-ahead limits (bytes, items) -> {0, attempt, progress..., read ahead...} run |
# {1} wait | {2} gone. A turn the completion of its thread's previous one began for this
# consumer (``BEGUN``: its progress's ``_begun``) runs in that attempt.
BEGIN = (
    OWNED
    + FIRST_IN_THREAD
    + STARTED
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return {2} end
local begun = redis.call('HGET', KEYS[3], '_begun')
redis.call('HDEL', KEYS[3], '_begun')
if begun == ARGV[3] then
  local attempt = tonumber(redis.call('HGET', KEYS[3], '_attempt'))
  local found = read_ahead(KEYS[4], ARGV[5], ARGV[6], ARGV[7], KEYS[3] .. '#' .. attempt)
  return {0, attempt, redis.call('HGETALL', KEYS[3]), found}
end
if not first_in_thread(KEYS[1], KEYS[2], ARGV[2]) then return {1} end
local attempt, progress, found = started(KEYS[3], ARGV[4], KEYS[4], ARGV[5], ARGV[6], ARGV[7])
return {0, attempt, progress, found}
"""
)

# KEYS: stream. ARGV: group, id, consumer
RENEW = (
    OWNED
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
"""
)

# KEYS: progress, then the staged writes' keys. ARGV: keep, the staged writes' arguments,
# then the fields. One round trip: the fields, the record's expiry and what the turn staged
# (``turn_writes``).
SAVE_PROGRESS = (
    STAGED_LUA
    + """
local fields = staged_writes(2, 2)
redis.call('HSET', KEYS[1], unpack(ARGV, fields))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""
)

# The thread's next turn, once the one before it completed, when it waits delivered to a
# worker: started for that worker (its attempt counted, its progress and the keys its
# asker's last turn read, read ahead, as ``BEGIN`` would), marked ``_begun`` with the
# worker's name and announced on ``P{turns}:begun``: the worker runs it without asking
# (``RedisTurnQueue.begun``); a worker that missed the announcement gets the same start from
# ``BEGIN``. A head whose entry no longer exists is dropped, as in ``first_in_thread``.
BEGUN = """
local function begin_next(stream, thread, group, base, keep, bytes, items)
  while true do
    local head = redis.call('LINDEX', thread, 0)
    if not head then return end
    local entry = redis.call('XRANGE', stream, head, head)
    if #entry == 1 then
      local pending = redis.call('XPENDING', stream, group, head, head, 1)
      if #pending == 0 then return end
      local fields = {}
      for i = 1, #entry[1][2], 2 do fields[entry[1][2][i]] = entry[1][2][i + 1] end
      local owner = fields['owner'] or ''
      local reads = base .. 'reads'
      if owner ~= '' then reads = reads .. ':' .. owner end
      local progress = base .. 'progress:' .. head
      local attempt, recorded, found = started(progress, keep, reads, fields['thread'], bytes,
                                               items)
      redis.call('HSET', progress, '_begun', pending[1][2])
      redis.call('PUBLISH', base .. 'begun',
                 cjson.encode({head, pending[1][2], attempt, recorded, found}))
      return
    end
    redis.call('LPOP', thread)
  end
end
"""

# KEYS: stream, thread list, progress, the owner's reads, then the staged writes' keys.
# ARGV: group, id, consumer, the keys the turn read (JSON templates; '': none), keep, key
# prefix, read-ahead limits (bytes, items), the number of quota hits its start made that it
# did not take, those hits (key, member), then the staged writes' arguments. Only the
# worker owning the turn writes what it staged and what it read, and takes those hits
# back; the thread's next turn is begun for the worker it waits in (``BEGUN``).
COMPLETE = (
    OWNED
    + STAGED_LUA
    + STARTED
    + BEGUN
    + """
if not owned(KEYS[1], ARGV[2], ARGV[3]) then return 0 end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('LREM', KEYS[2], 1, ARGV[2])
redis.call('DEL', KEYS[3])
if ARGV[4] ~= '' then redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[5]) end
local untaken = tonumber(ARGV[9])
for i = 10, 9 + 2 * untaken, 2 do redis.call('ZREM', ARGV[i], ARGV[i + 1]) end
staged_writes(5, 10 + 2 * untaken)
begin_next(KEYS[1], KEYS[2], ARGV[1], ARGV[6], ARGV[5], ARGV[7], ARGV[8])
return 1
"""
)
