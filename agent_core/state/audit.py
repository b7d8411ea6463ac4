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

import os
from abc import ABC, abstractmethod
from typing import Any

from agent_core.audit_chain import GENESIS, AuditEntry, AuditRecord, Pseudonyms, seal

Identity = dict[str, str]
"""Who a pseudonym stands for, as the directory keeps it: ``id``, ``name``, ``email``."""


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

    @abstractmethod
    async def append(self, entry: AuditEntry, *, identity: Identity | None = None) -> AuditRecord:
        """Seal ``entry`` after the newest record (``identity``: the directory entry of its
        person, written in the same step)."""

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
        return None


class MemoryAuditStore(AuditStore):
    """The trail in this process (``--ephemeral``, tests)."""

    def __init__(self) -> None:
        self.trail: list[AuditRecord] = []
        self.directory: dict[str, Identity] = {}
        self._key: bytes | None = None

    async def append(self, entry: AuditEntry, *, identity: Identity | None = None) -> AuditRecord:
        prev = self.trail[-1].hash if self.trail else GENESIS
        record = seal(prev, len(self.trail) + 1, entry)
        self.trail.append(record)
        if identity is not None and entry.person is not None:
            self.directory[entry.person] = identity
        return record

    async def records(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[AuditRecord]:
        return [r for r in self.trail if within(r.at, since, until)]

    async def head(self) -> str | None:
        return self.trail[-1].hash if self.trail else None

    async def people(self) -> dict[str, Identity]:
        return dict(self.directory)

    async def erase(self, pseudonym: str, *, dry_run: bool = False) -> int:
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
