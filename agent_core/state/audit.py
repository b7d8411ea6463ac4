"""``AuditStore``: the durable, hash-chained audit trail (``agent_core.audit_chain``).

One store per state back end: ``MemoryAuditStore`` (tests, the console), SQLite
(``audit_sqlite``: one transaction per record, so processes sharing a data directory keep
one chain) and Redis (``audit_redis``: a stream appended by a script that checks the head).
Beside the records each keeps:

- the *head*: the newest record's sequence number and hash;
- the *directory of people*: pseudonym -> who (id, name, email), the only way from a
  record's pseudonym back to a person; ``erase`` removes a person's entry and their
  records' details, never a sealed field;
- the *pseudonym key*, made once at random and shared by every process.
"""

from __future__ import annotations

import asyncio
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_core.audit_chain import GENESIS, AuditEntry, AuditRecord, Pseudonyms, seal

logger = logging.getLogger("threadline.audit")

Identity = dict[str, str]
"""Who a pseudonym stands for, as the directory keeps it: ``id``, ``name``, ``email``."""

Pending = tuple[AuditEntry, Identity | None]

MAX_QUEUED = 100_000
"""Records a process queues while its store cannot take them (then the oldest go, told)."""
Written = Callable[[AuditRecord], Awaitable[None]]


class AuditStore(ABC):
    """Append sealed records; read them back in order; erase a person's details.

    >>> import asyncio
    >>> from agent_core.audit_chain import AuditEntry, verify
    >>> store = MemoryAuditStore()
    >>> record = asyncio.run(store.append(AuditEntry(at=1.0, kind="question")))
    >>> record.seq, asyncio.run(store.verify()).ok
    (1, True)
    """

    _pseudonyms: Pseudonyms | None = None
    _pending: list[Pending]
    _writer: asyncio.Task[None] | None = None
    _writing: asyncio.Lock
    on_written: list[Written]

    def __init__(self) -> None:
        self._pending = []
        self._writing = asyncio.Lock()
        self.on_written = []
        """Called with each record once it is kept (the forwarders: a JSONL file, OTel)."""

    async def append(self, entry: AuditEntry, *, identity: Identity | None = None) -> AuditRecord:
        """Seal ``entry`` after the newest record now (``identity``: the directory entry of
        its person, written in the same step)."""
        await self.flush()
        (record,) = await self._append_many([(entry, identity)])
        await self._written([record])
        return record

    def submit(self, entry: AuditEntry, *, identity: Identity | None = None) -> None:
        """Queue ``entry``: this process's writer seals the queue in one step (one
        transaction, one script) as soon as the turn yields, so a turn does not wait for
        its records. ``flush`` (and every read, and ``close``) writes what is queued."""
        if len(self._pending) >= MAX_QUEUED:  # the store has been down for a long while
            logger.error("audit: the store is not taking records; the oldest queued is lost")
            del self._pending[0]
        self._pending.append((entry, identity))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_behind())

    async def _write_behind(self) -> None:
        try:
            await self.flush()
        except Exception:  # kept queued: the next submit, read or close writes them
            logger.warning("audit records not written yet (%d queued)", len(self._pending))

    async def flush(self) -> None:
        """Write every queued record, in order."""
        async with self._writing:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    records = await self._append_many(batch)
                except BaseException:
                    self._pending[:0] = batch
                    raise
                await self._written(records)

    async def _written(self, records: Sequence[AuditRecord]) -> None:
        for forward in self.on_written:
            for record in records:
                try:
                    await forward(record)
                except Exception:  # the record is kept; a forwarder down is told, not fatal
                    logger.warning("audit record %s not forwarded", record.seq, exc_info=True)

    @abstractmethod
    async def _append_many(self, batch: Sequence[Pending]) -> list[AuditRecord]:
        """Seal ``batch`` after the newest record, in one step."""

    @abstractmethod
    async def records(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[AuditRecord]:
        """Every record in chain order, those with ``since <= at < until`` when given."""

    @abstractmethod
    async def head(self) -> str | None:
        """The newest record's hash (None: the trail is empty)."""

    @abstractmethod
    async def people(self) -> dict[str, Identity]:
        """The directory: pseudonym -> identity."""

    @abstractmethod
    async def erase(self, pseudonym: str, *, dry_run: bool = False) -> int:
        """Drop ``pseudonym`` from the directory and its records' details; how many records
        held details of theirs."""

    @abstractmethod
    async def _stored_key(self, candidate: bytes) -> bytes:
        """The pseudonym key: ``candidate`` when none was kept yet (atomically), else the
        kept one."""

    async def pseudonyms(self) -> Pseudonyms:
        if self._pseudonyms is None:
            self._pseudonyms = Pseudonyms(await self._stored_key(os.urandom(32)))
        return self._pseudonyms

    async def verify(self) -> Any:
        from agent_core.audit_chain import verify

        return verify(await self.records(), head=await self.head())

    async def close(self) -> None:
        """Write what is queued; when the store cannot take it (Redis down at shutdown),
        say how many records are lost rather than fail the shutdown."""
        try:
            await self.flush()
        except Exception:
            logger.error("audit: %d records could not be written at close", len(self._pending))


class MemoryAuditStore(AuditStore):
    """The trail in this process (``--ephemeral``, tests)."""

    def __init__(self) -> None:
        super().__init__()
        self.trail: list[AuditRecord] = []
        self.directory: dict[str, Identity] = {}
        self._key: bytes | None = None

    def submit(self, entry: AuditEntry, *, identity: Identity | None = None) -> None:
        """In memory there is nothing to wait for: kept at once (unless forwarded)."""
        if self.on_written:
            super().submit(entry, identity=identity)
        else:
            self._keep([(entry, identity)])

    async def _append_many(self, batch: Sequence[Pending]) -> list[AuditRecord]:
        return self._keep(batch)

    def _keep(self, batch: Sequence[Pending]) -> list[AuditRecord]:
        records = []
        for entry, identity in batch:
            prev = self.trail[-1].hash if self.trail else GENESIS
            record = seal(prev, len(self.trail) + 1, entry)
            self.trail.append(record)
            records.append(record)
            if identity is not None and entry.person is not None:
                self.directory[entry.person] = identity
        return records

    async def records(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[AuditRecord]:
        await self.flush()
        return [r for r in self.trail if within(r.at, since, until)]

    async def head(self) -> str | None:
        await self.flush()
        return self.trail[-1].hash if self.trail else None

    async def people(self) -> dict[str, Identity]:
        await self.flush()
        return dict(self.directory)

    async def erase(self, pseudonym: str, *, dry_run: bool = False) -> int:
        await self.flush()
        theirs = [
            i
            for i, r in enumerate(self.trail)
            if r.person == pseudonym and r.details is not None and r.details
        ]
        if not dry_run:
            self.directory.pop(pseudonym, None)
            for i in theirs:
                self.trail[i] = self.trail[i].model_copy(update={"details": None})
        return len(theirs)

    async def _stored_key(self, candidate: bytes) -> bytes:
        if self._key is None:
            self._key = candidate
        return self._key


def within(at: float, since: float | None, until: float | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)
