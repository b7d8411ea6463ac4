"""The audit trail's records and their hash chain: what ``threadline audit verify`` checks.

Each record holds the hash of the record before it (``prev``) and its own ``hash``,
``sha256(prev + canonical JSON of its sealed fields)``, so editing, removing or inserting a
record anywhere breaks the chain at that record; the store keeps the last hash beside the
records (its *head*), so removing the newest records is caught too.

The person in a record is already a keyed pseudonym (``Pseudonyms``), never the id, so
erasing a person (``threadline forget``) leaves every hash untouched: their row in the
store's directory of people goes, and with it the only way back from the pseudonym. A
record's ``details`` (tool arguments, the question's text when configured) are sealed
through their digest: erasing them leaves the digest, and the chain still verifies.

>>> first = seal(GENESIS, 1, AuditEntry(at=0.0, kind="question", person="p:1"))
>>> second = seal(first.hash, 2, AuditEntry(at=1.0, kind="erase", person="p:1"))
>>> verify([first, second], head=second.hash).ok
True
>>> tampered = second.model_copy(update={"kind": "question"})
>>> verify([first, tampered], head=second.hash).first_bad
2
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

GENESIS = "0" * 64
"""The ``prev`` of the first record."""


def canonical(value: Any) -> str:
    """The one JSON form hashed: sorted keys, no spaces, UTF-8 kept.

    >>> canonical({"b": 1, "a": [1.5, None]})
    '{"a":[1.5,null],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(details: dict[str, Any]) -> str:
    """The sha256 of a record's details (what the chain seals of them)."""
    return hashlib.sha256(canonical(details).encode()).hexdigest()


class AuditEntry(BaseModel):
    """One audited fact before it is sealed into the chain.

    ``person``: a pseudonym (``Pseudonyms.of``), or None for the system; ``workspace``:
    ``slack:T…`` / ``teams:tenant``; ``details``: the kind's own fields, secrets redacted.
    """

    model_config = ConfigDict(frozen=True)

    at: float
    kind: str
    person: str | None = None
    workspace: str | None = None
    profile: str | None = None
    conversation: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


SEALED = (
    "seq",
    "at",
    "kind",
    "person",
    "workspace",
    "profile",
    "conversation",
    "details_hash",
    "prev",
)
"""The fields of a record its hash covers, in the order they are declared."""


class AuditRecord(BaseModel):
    """A sealed record as the store keeps it; ``details`` is None once erased."""

    model_config = ConfigDict(frozen=True)

    seq: int
    at: float
    kind: str
    person: str | None = None
    workspace: str | None = None
    profile: str | None = None
    conversation: str | None = None
    details: dict[str, Any] | None = None
    details_hash: str
    prev: str
    hash: str

    def sealed(self) -> dict[str, Any]:
        """The fields the hash covers (everything but the details themselves and ``hash``)."""
        return {name: getattr(self, name) for name in SEALED}


def chain_hash(prev: str, sealed: dict[str, Any]) -> str:
    return hashlib.sha256((prev + canonical(sealed)).encode()).hexdigest()


def seal(prev: str, seq: int, entry: AuditEntry) -> AuditRecord:
    """``entry`` as record ``seq`` after the record whose hash is ``prev``."""
    sealed: dict[str, Any] = {name: getattr(entry, name) for name in SEALED[1:7]}
    sealed.update(seq=seq, details_hash=digest(entry.details), prev=prev)
    return AuditRecord.model_construct(
        **sealed, details=entry.details, hash=chain_hash(prev, sealed)
    )


class Verdict(BaseModel):
    """What ``verify`` found: ``first_bad`` is the sequence number of the first record that
    does not follow from the one before it (or of the last one, when the head disagrees)."""

    ok: bool
    checked: int
    erased: int = 0
    first_bad: int | None = None
    reason: str = ""

    def sentence(self) -> str:
        if self.ok:
            return f"audit trail intact: {self.checked} records ({self.erased} erased details)"
        return f"audit trail BROKEN at record {self.first_bad}: {self.reason}"


def verify(records: Iterable[AuditRecord], *, head: str | None) -> Verdict:
    """Walk the chain from the first record; the first break is named."""
    prev, expected_seq, checked, erased = GENESIS, 1, 0, 0
    last: AuditRecord | None = None
    for record in records:
        problem = _problem(record, prev, expected_seq)
        if problem:
            return Verdict(ok=False, checked=checked, first_bad=record.seq, reason=problem)
        erased += record.details is None
        prev, expected_seq, checked, last = record.hash, record.seq + 1, checked + 1, record
    if (head or GENESIS) != prev:
        at = last.seq if last is not None else 0
        why = "the newest records were removed" if head else "the head of the chain is gone"
        return Verdict(ok=False, checked=checked, first_bad=at, reason=why)
    return Verdict(ok=True, checked=checked, erased=erased)


def _problem(record: AuditRecord, prev: str, expected_seq: int) -> str:
    if record.prev != prev:
        return "it does not follow the record before it (one was removed or inserted)"
    if record.seq != expected_seq:
        return f"sequence {record.seq} where {expected_seq} was expected"
    if chain_hash(prev, record.sealed()) != record.hash:
        return "its content was changed"
    if record.details is not None and digest(record.details) != record.details_hash:
        return "its details were changed"
    return ""


class Pseudonyms:
    """A person's stable, keyed pseudonym: ``p:`` + 20 hex digits of HMAC-SHA256.

    >>> Pseudonyms(b"k").of("slack:T1:U1") == Pseudonyms(b"k").of("slack:T1:U1")
    True
    >>> Pseudonyms(b"k").of("slack:T1:U1").startswith("p:")
    True
    """

    def __init__(self, key: bytes, *, remember: int = 10_000) -> None:
        self._key = key
        self._known: dict[str, str] = {}  # the people of recent turns (bounded)
        self._remember = remember

    def of(self, person: str) -> str:
        if (known := self._known.get(person)) is not None:
            return known
        mac = hmac.new(self._key, person.encode(), hashlib.sha256).hexdigest()
        if len(self._known) >= self._remember:
            self._known.clear()
        self._known[person] = f"p:{mac[:20]}"
        return self._known[person]
