"""Lua scripts of ``RedisAgentMemory``: each mutation is one atomic script that also
appends to the scope's change log, so every process can follow the scope incrementally.

Keys of one scope (all share its hash tag), in the order the scripts receive them::

    1 tools      hash  id -> ToolMemory JSON (without memory_id)
    2 tool_meta  hash  id -> searchable fields (question, tool, success, timestamp)
    3 tool_order zset  id -> change number (recency)
    4 tool_fp    hash  id -> fingerprint
    5 fps        hash  fingerprint -> id (saving the same use again refreshes it)
    6 texts      hash  id -> TextMemory JSON (without memory_id)
    7 text_order zset  id -> change number
    8 seq        counter of changes
    9 log        stream of changes: seq, op (put_tool|put_text|del_tool|del_text), id, meta
"""

from __future__ import annotations

KEY_NAMES = (
    "tools",
    "tool_meta",
    "tool_order",
    "tool_fp",
    "fps",
    "texts",
    "text_order",
    "seq",
    "log",
)

_PRELUDE = """
local K_TOOLS, K_META, K_TORDER, K_TFP, K_FPS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local K_TEXTS, K_XORDER, K_SEQ, K_LOG = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local LOG_MAX = ARGV[1]
local function log(op, id, meta)
  local seq = redis.call('INCR', K_SEQ)
  redis.call('XADD', K_LOG, 'MAXLEN', '~', LOG_MAX, '*', 'seq', seq, 'op', op, 'id', id,
             'meta', meta)
  return seq
end
local function drop_tool(id)
  if redis.call('HDEL', K_TOOLS, id) == 0 then return 0 end
  local fp = redis.call('HGET', K_TFP, id)
  if fp then redis.call('HDEL', K_FPS, fp) end
  redis.call('HDEL', K_TFP, id)
  redis.call('HDEL', K_META, id)
  redis.call('ZREM', K_TORDER, id)
  log('del_tool', id, '')
  return 1
end
local function drop_text(id)
  if redis.call('HDEL', K_TEXTS, id) == 0 then return 0 end
  redis.call('ZREM', K_XORDER, id)
  log('del_text', id, '')
  return 1
end
local function trim(order, keep, drop)
  local excess = redis.call('ZCARD', order) - keep
  if excess > 0 then
    for _, old in ipairs(redis.call('ZRANGE', order, 0, excess - 1)) do drop(old) end
  end
end
"""

# ARGV: log_max, fingerprint, candidate id, body, meta, max_items -> the memory id
SAVE_TOOL = (
    _PRELUDE
    + """
local id = redis.call('HGET', K_FPS, ARGV[2]) or ARGV[3]
redis.call('HSET', K_TOOLS, id, ARGV[4])
redis.call('HSET', K_META, id, ARGV[5])
redis.call('HSET', K_TFP, id, ARGV[2])
redis.call('HSET', K_FPS, ARGV[2], id)
redis.call('ZADD', K_TORDER, log('put_tool', id, ARGV[5]), id)
trim(K_TORDER, tonumber(ARGV[6]), drop_tool)
return id
"""
)

# ARGV: log_max, id, body (also the meta), max_items
SAVE_TEXT = (
    _PRELUDE
    + """
redis.call('HSET', K_TEXTS, ARGV[2], ARGV[3])
redis.call('ZADD', K_XORDER, log('put_text', ARGV[2], ARGV[3]), ARGV[2])
trim(K_XORDER, tonumber(ARGV[4]), drop_text)
return 1
"""
)

# ARGV: log_max, kind ('tool'|'text'), ids... -> how many existed
DELETE = (
    _PRELUDE
    + """
local drop = ARGV[2] == 'tool' and drop_tool or drop_text
local deleted = 0
for i = 3, #ARGV do deleted = deleted + drop(ARGV[i]) end
return deleted
"""
)

# ARGV: log_max, after stream id, count -> {current seq, entries after that id}
CHANGES = (
    _PRELUDE
    + """
local current = tonumber(redis.call('GET', K_SEQ) or '0')
return {current, redis.call('XRANGE', K_LOG, '(' .. ARGV[2], '+', 'COUNT', ARGV[3])}
"""
)

# ARGV: log_max -> {seq, last log id, tool ids, tool metas, text ids, text bodies}
SNAPSHOT = (
    _PRELUDE
    + """
local function fetch(order, hash)
  local ids = redis.call('ZRANGE', order, 0, -1)
  local values = {}
  for start = 1, #ids, 1000 do
    local chunk = {unpack(ids, start, math.min(start + 999, #ids))}
    for _, v in ipairs(redis.call('HMGET', hash, unpack(chunk))) do table.insert(values, v) end
  end
  return ids, values
end
local last = redis.call('XREVRANGE', K_LOG, '+', '-', 'COUNT', 1)
local last_id = '0-0'
if #last > 0 then last_id = last[1][1] end
local tool_ids, metas = fetch(K_TORDER, K_META)
local text_ids, texts = fetch(K_XORDER, K_TEXTS)
return {tonumber(redis.call('GET', K_SEQ) or '0'), last_id, tool_ids, metas, text_ids, texts}
"""
)
