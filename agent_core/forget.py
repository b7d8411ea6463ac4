"""Erase a person from every store of a ``State`` (``threadline forget``).

``find_person`` turns what an operator knows (``slack:T1:U1``, a bare ``U1`` or Teams
object id, an email) into the person's ``User.id``s through the audit trail's directory of
people. ``forget_person`` then erases, for each id, store by store:

================  =============================================================
conversations     every conversation of theirs (every profile and workspace)
memory            every memory their turns made, in every scope (shared ones too)
schedules         every schedule they own (removed; its place told once, through the
                  turn queue: ``agent_core.schedules.removed``)
approvals         theirs: pending ones cancelled, then every record of theirs deleted
cache / records   identity caches, MCP tokens (``mcp:token:*``), "approved once" marks
(channels)        what the bots add: Slack's thread transcripts (their messages dropped)
usage             kept, under their pseudonym: the totals stay true
audit trail       kept, under their pseudonym: the directory entry and their records'
                  details go; the chain still verifies; the erase is itself a record
================  =============================================================

Each step counts what it found (``dry_run``: counts only). A back end that cannot erase a
kind says so in the report instead of failing the rest.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from agent_core.audit_chain import AuditEntry
from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.errors import ThreadlineError

if TYPE_CHECKING:
    from agent_core.state.keyvalue import KeyValueStore
    from agent_core.state_factory import State

logger = logging.getLogger("threadline.forget")
T = TypeVar("T")


class UnknownPerson(ThreadlineError, LookupError):
    """Nobody the stores know matches what was given."""


@dataclass
class ForgetReport:
    """What ``forget_person`` found per store (and erased, unless ``dry_run``)."""

    person: str
    ids: list[str]
    pseudonym: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    """How long each store took (``benchmarks/forget.py`` prints it)."""
    unsupported: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        verb = "would erase" if self.dry_run else "erased"
        head = f"{verb} {self.person} ({', '.join(self.ids)}), now {self.pseudonym}:"
        rows = [f"  {store:<14} {count}" for store, count in self.counts.items()]
        rows += [f"  {store:<14} not erased: {why}" for store, why in self.unsupported.items()]
        return [head, *rows]


async def find_person(state: State, given: str) -> list[str]:
    """The ``User.id``s ``given`` names: itself when it is one (``slack:T1:U1``), else every
    id in the audit directory with that email or ending in ``:given``."""
    directory = (await state.audit.people()).values()
    if given.startswith(("slack:", "teams:")) and given.count(":") >= 2:
        return [given]
    if "@" in given:
        found = [who["id"] for who in directory if who.get("email", "").lower() == given.lower()]
    else:
        found = [who["id"] for who in directory if who.get("id", "").endswith(f":{given}")]
    if not found:
        raise UnknownPerson(
            f"no one known as {given!r}: give their full id (slack:TEAM:USER, "
            "teams:TENANT:OBJECT_ID)"
        )
    return sorted(set(found))


def cache_patterns(person: str) -> list[str]:
    """The cache and record keys that hold ``person`` (glob patterns).

    >>> cache_patterns("slack:T1:U1")[:2]
    ['slack:identity:user:T1:U1', 'identity:slack:T1:U1']
    """
    from agent_core.mcp.auth.vault import person_key

    platform, _, rest = person.partition(":")
    return [
        f"{platform}:identity:user:{rest}",
        f"identity:{person}",
        f"mcp:token:*:{person_key(person)}",
        f"approval:once:*:{person}:*",
    ]


Step = Callable[[str, bool], Awaitable[int]]

AT_ONCE = 32
"""Deletes in flight at once (Redis: one round trip each, over the client's pool)."""


async def _each(items: list[T], erase: Callable[[T], Awaitable[object]]) -> None:
    """``erase`` every item, ``AT_ONCE`` at a time."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(item: T) -> None:
        async with gate:
            await erase(item)

    await asyncio.gather(*(one(item) for item in items))


async def forget_person(
    state: State,
    ids: list[str],
    *,
    given: str,
    dry_run: bool = False,
    clock: Clock | None = None,
    channels: Mapping[str, Step] | None = None,
    tell_places: bool = True,
) -> ForgetReport:
    """Erase ``ids`` (one person) from every store of ``state``; see the module docstring.
    ``channels``: the channels' own steps (the bots pass Slack's thread transcripts), each
    ``step(person, dry_run) -> count``; ``tell_places``: queue each removed schedule's
    one-line notice (not after an uninstall: nothing can post there any more)."""
    pseudonyms = await state.audit.pseudonyms()
    pseudonym = pseudonyms.of(ids[0])
    report = ForgetReport(person=given, ids=ids, pseudonym=pseudonym, dry_run=dry_run)
    steps: dict[str, Step] = {
        "conversations": lambda p, d: state.conversations.forget_user(p, dry_run=d),
        "memory": lambda p, d: state.memory.forget_owner(p, dry_run=d),
        "schedules": lambda p, d: _schedules(state, p, d, tell=tell_places),
        "approvals": lambda p, d: _approvals(state, p, d),
        "cache": lambda p, d: _keys(state.cache, p, d),
        "records": lambda p, d: _keys(state.records, p, d),
        "usage": lambda p, d: state.usage.pseudonymise(p, pseudonyms.of(p), dry_run=d),
        "audit": lambda p, d: state.audit.erase(pseudonyms.of(p), dry_run=d),
        **(channels or {}),
    }
    for name, step in steps.items():
        started = time.perf_counter()
        for person in ids:
            try:
                found = await step(person, dry_run)
            except NotImplementedError as missing:
                report.unsupported[name] = str(missing)
                continue
            report.counts[name] = report.counts.get(name, 0) + found
        report.seconds[name] = round(time.perf_counter() - started, 3)
    if not dry_run:
        now = (clock or SYSTEM_CLOCK).now()
        erased = AuditEntry(at=now, kind="erase", person=pseudonym, details=dict(report.counts))
        await state.audit.append(erased)
    return report


async def _schedules(state: State, person: str, dry_run: bool, *, tell: bool) -> int:
    from agent_core.schedules.removed import ERASED, queue_notice

    owned = await state.schedules.owned_by(person)
    if dry_run:
        return len(owned)
    if tell:  # queued first: a crash in between leaves the schedule, and a rerun tells once
        for schedule in owned:
            await queue_notice(state.turns, schedule, ERASED)
    await _each([schedule.id for schedule in owned], state.schedules.remove)
    return len(owned)


async def _approvals(state: State, person: str, dry_run: bool) -> int:
    """Approvals they asked for: a pending one cancelled (nobody can approve it any more),
    then every record of it deleted (it holds their arguments)."""
    from agent_core.approvals.book import ApprovalBook

    book = ApprovalBook(state.records)
    theirs: list[str] = []

    async def read(key: str) -> None:
        stored = await state.records.get(key)
        if isinstance(stored, dict) and stored.get("asker_id") == person:
            theirs.append(key.removeprefix("approval:"))

    # not its decision, message or the due lanes: only the record itself
    await _each([k for k in await state.records.keys("approval:*") if k.count(":") == 1], read)

    async def erase(approval_id: str) -> None:
        await book.decide(approval_id, "cancelled", by=None, note="the asker was erased")
        for part in ("", ":decision", ":message", ":ran"):
            await state.records.delete(f"approval:{approval_id}{part}")

    if not dry_run:
        await _each(theirs, erase)
    return len(theirs)


async def _keys(store: KeyValueStore, person: str, dry_run: bool) -> int:
    found: list[str] = []
    for pattern in cache_patterns(person):
        found += await store.keys(pattern)
    if not dry_run:
        await _each(found, store.delete)
    return len(found)


async def forget_workspace(
    state: State,
    workspace: str,
    *,
    dry_run: bool = False,
    clock: Clock | None = None,
    channels: Mapping[str, Step] | None = None,
) -> list[ForgetReport]:
    """Erase everyone the audit directory knows in ``workspace`` (``slack:T1``,
    ``teams:TENANT``) as ``forget_person`` does, then the workspace's remaining schedules:
    for an uninstall (``app_uninstalled``, ``tokens_revoked``), whose handler calls this.
    The usage ledger and the audit trail keep their pseudonyms."""
    prefix = f"{workspace}:"
    people = sorted({w["id"] for w in (await state.audit.people()).values()})
    reports = [
        await forget_person(
            state,
            [person],
            given=person,
            dry_run=dry_run,
            clock=clock,
            channels=channels,
            tell_places=False,
        )
        for person in people
        if person.startswith(prefix)
    ]
    if not dry_run:
        left = await state.schedules.in_workspace(workspace)
        await _each([schedule.id for schedule in left], state.schedules.remove)
    return reports
