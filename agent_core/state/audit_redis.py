"""``RedisAuditStore``: the audit trail as a Redis stream shared by every process.

Keys under ``{prefix}audit:``: ``trail`` (the stream: one entry per record, its sealed
fields), ``head`` (``"seq hash"`` of the newest record), ``details`` (hash: seq -> the
record's details; erased ones are gone), ``people`` (hash: pseudonym -> identity), ``key``
(the pseudonym key).

Redis has no sha256 in its scripts, so the hash is computed here and one script appends
only when the head is still the one the record was sealed after: otherwise it answers the
current head and the record is sealed again after it. The chain stays a single line
whatever the number of processes, in one round trip when nothing raced.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_core.audit_chain import GENESIS, AuditRecord, seal
from agent_core.state.audit import AuditStore, Identity, Pending, within
from agent_core.state.redis_client import redis_boundary

if TYPE_CHECKING:
    from redis.asyncio import Redis

_APPEND = """
local head = redis.call('GET', KEYS[2]) or ''
if head ~= ARGV[1] then return head end
for i = 2, #ARGV, 6 do
  redis.call('XADD', KEYS[1], '*', 'r', ARGV[i + 2])
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 3])
  if ARGV[i + 4] ~= '' then redis.call('HSET', KEYS[4], ARGV[i + 4], ARGV[i + 5]) end
  redis.call('SET', KEYS[2], ARGV[i] .. ' ' .. ARGV[i + 1])
end
return false
"""
"""ARGV: the head the batch was sealed after, then per record: seq, hash, sealed fields,
details, person (or ''), identity."""


class RedisAuditStore(AuditStore):
    """See the module docstring.

    >>> from agent_core.state.redis_client import connect_redis
    >>> RedisAuditStore(connect_redis("redis://127.0.0.1:6379/0")).key("head")
    'threadline:audit:head'
    """

    def __init__(self, redis: Redis, *, key_prefix: str = "threadline:") -> None:
        super().__init__()
        self._redis = redis
        self.key_prefix = key_prefix
        self._append = redis.register_script(_APPEND)
        self._head: str | None = None  # "seq hash" as last seen; checked by the script

    def key(self, name: str) -> str:
        return f"{self.key_prefix}audit:{name}"

    @redis_boundary
    async def _append_many(self, batch: Sequence[Pending]) -> list[AuditRecord]:
        if self._head is None:
            self._head = _text(await self._redis.get(self.key("head")))
        keys = [self.key(name) for name in ("trail", "head", "details", "people")]
        while True:
            seq, prev = _parse(self._head)
            records: list[AuditRecord] = []
            args: list[str] = [self._head]
            for entry, identity in batch:
                record = seal(prev, seq + 1, entry)
                seq, prev = record.seq, record.hash
                sealed = json.dumps(record.sealed() | {"hash": record.hash}, sort_keys=True)
                person = entry.person or "" if identity else ""
                who = json.dumps(identity, sort_keys=True) if person else ""
                details = json.dumps(entry.details, sort_keys=True)
                args += [str(seq), record.hash, sealed, details, person, who]
                records.append(record)
            current = await self._append(keys=keys, args=args)
            if current is None:
                self._head = f"{seq} {prev}"
                return records
            self._head = _text(current)  # another process appended first: seal after theirs

    @redis_boundary
    async def records(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[AuditRecord]:
        await self.flush()
        details: dict[str, str] = await self._redis.hgetall(self.key("details"))  # type: ignore[assignment]
        found = []
        for sealed in await self._sealed():
            if not within(sealed["at"], since, until):
                continue
            kept = details.get(str(sealed["seq"]))
            sealed["details"] = None if kept is None else json.loads(kept)
            found.append(AuditRecord.model_validate(sealed))
        return found

    async def _sealed(self) -> list[dict[str, Any]]:
        """The sealed fields of every record, in the stream's order."""
        entries: list[tuple[str, dict[str, str]]] = await self._redis.xrange(self.key("trail"))  # type: ignore[assignment]
        return [json.loads(fields["r"]) for _, fields in entries]

    @redis_boundary
    async def head(self) -> str | None:
        await self.flush()
        value = _text(await self._redis.get(self.key("head")))
        return _parse(value)[1] if value else None

    @redis_boundary
    async def people(self) -> dict[str, Identity]:
        await self.flush()
        found: dict[str, str] = await self._redis.hgetall(self.key("people"))  # type: ignore[assignment]
        return {name: json.loads(who) for name, who in found.items()}

    @redis_boundary
    async def erase(self, pseudonym: str, *, dry_run: bool = False) -> int:
        await self.flush()
        theirs = [str(s["seq"]) for s in await self._sealed() if s.get("person") == pseudonym]
        kept = await self._redis.hmget(self.key("details"), theirs) if theirs else []
        holding = [
            seq for seq, value in zip(theirs, kept, strict=True) if value not in (None, "{}")
        ]
        if not dry_run:
            async with self._redis.pipeline(transaction=True) as pipe:
                if holding:
                    pipe.hdel(self.key("details"), *holding)
                pipe.hdel(self.key("people"), pseudonym)
                await pipe.execute()
        return len(holding)

    @redis_boundary
    async def _stored_key(self, candidate: bytes) -> bytes:
        await self._redis.set(self.key("key"), base64.b64encode(candidate).decode(), nx=True)
        return base64.b64decode(_text(await self._redis.get(self.key("key"))))


def _text(value: bytes | str | None) -> str:
    """A reply as text (the client decodes; ``None``: empty)."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


def _parse(head: str | None) -> tuple[int, str]:
    """``"seq hash"`` -> (seq, hash); the empty trail is (0, GENESIS)."""
    if not head:
        return 0, GENESIS
    seq, _, value = head.partition(" ")
    return int(seq), value
