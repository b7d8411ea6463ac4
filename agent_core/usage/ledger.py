"""``UsageLedger``: every LLM call's tokens and cost, by turn, person, profile, workspace.

A ``UsageRecord`` is one call. The ledger keeps, per UTC day, the totals of each person,
profile, workspace and model (what ``/usage`` and ``threadline usage`` show), and each
turn's totals for a week. ``MemoryUsageLedger`` is one process's; the state store has one
on SQLite (``agent_core.usage.ledger_sqlite``, one process) and Redis
(``agent_core.usage.ledger_redis``, any number), chosen with the rest of the state.

Costs are integers in billionths of a dollar; a call whose model has no price adds its
tokens to ``unpriced_tokens`` instead, so a total with unknown parts says so.

>>> import asyncio, datetime as dt
>>> ledger = MemoryUsageLedger()
>>> call = UsageRecord(at=dt.datetime(2026, 11, 26, 9, tzinfo=dt.UTC), turn_id="t1",
...     person="slack:T1:U1", profile="finance", workspace="slack:T1", model="m",
...     tokens=TokenCounts(input=10, output=5), cost_nano=150)
>>> asyncio.run(ledger.record(call))
>>> summary = asyncio.run(ledger.summary(dt.date(2026, 11, 26), dt.date(2026, 11, 26)))
>>> summary.total.tokens.total, summary.top("person")[0].key
(15, 'slack:T1:U1')
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from agent_core.usage.counts import KINDS, TokenCounts

Dimension = Literal["person", "profile", "workspace", "model"]
DIMENSIONS: tuple[Dimension, ...] = ("person", "profile", "workspace", "model")
NO_PROFILE = "(default)"
"""How the agent served outside any profile is named in reports."""

TURN_DAYS = 7
"""How long a turn's totals are kept."""


@dataclass(frozen=True)
class UsageRecord:
    """One LLM call: when, which turn, who, where, which model, its tokens and cost."""

    at: dt.datetime
    turn_id: str
    person: str
    profile: str | None
    workspace: str | None
    model: str
    tokens: TokenCounts
    cost_nano: int | None

    @property
    def day(self) -> dt.date:
        return self.at.astimezone(dt.UTC).date()

    def keys(self) -> dict[Dimension, str]:
        """The record's key in each dimension."""
        return {
            "person": self.person,
            "profile": self.profile or NO_PROFILE,
            "workspace": self.workspace or "(none)",
            "model": self.model,
        }


@dataclass
class Totals:
    """Tokens, priced cost, and the tokens no price was known for."""

    tokens: TokenCounts = field(default_factory=TokenCounts)
    cost_nano: int = 0
    unpriced_tokens: int = 0
    calls: int = 0

    def add(self, tokens: TokenCounts, cost_nano: int | None, calls: int = 1) -> None:
        self.tokens = self.tokens + tokens
        self.calls += calls
        if cost_nano is None:
            self.unpriced_tokens += tokens.total
        else:
            self.cost_nano += cost_nano

    def merge(self, other: Totals) -> None:
        self.tokens = self.tokens + other.tokens
        self.cost_nano += other.cost_nano
        self.unpriced_tokens += other.unpriced_tokens
        self.calls += other.calls

    @property
    def cost_known(self) -> bool:
        return self.unpriced_tokens == 0

    @classmethod
    def of(cls, fields: dict[str, int]) -> Totals:
        """From stored counters (``input``..., ``cost``, ``unpriced``, ``calls``)."""
        totals = cls(
            tokens=TokenCounts(**{kind: int(fields.get(kind, 0)) for kind in KINDS}),
            cost_nano=int(fields.get("cost", 0)),
            unpriced_tokens=int(fields.get("unpriced", 0)),
            calls=int(fields.get("calls", 0)),
        )
        return totals

    def counters(self) -> dict[str, int]:
        """The stored form (see ``of``)."""
        return {
            **self.tokens.as_dict(),
            "cost": self.cost_nano,
            "unpriced": self.unpriced_tokens,
            "calls": self.calls,
        }


@dataclass(frozen=True)
class Ranked:
    """One key of a dimension with its totals."""

    key: str
    totals: Totals


@dataclass
class UsageSummary:
    """Totals over days ``first``..``last`` (UTC), overall and per dimension."""

    first: dt.date
    last: dt.date
    total: Totals = field(default_factory=Totals)
    by: dict[Dimension, dict[str, Totals]] = field(
        default_factory=lambda: {dimension: {} for dimension in DIMENSIONS}
    )

    def add(self, dimension: Dimension, key: str, totals: Totals) -> None:
        self.by[dimension].setdefault(key, Totals()).merge(totals)

    def top(self, dimension: Dimension, limit: int = 5) -> list[Ranked]:
        """The biggest spenders: by cost, then tokens."""
        ranked = [Ranked(key, totals) for key, totals in self.by[dimension].items()]
        ranked.sort(key=lambda r: (-r.totals.cost_nano, -r.totals.tokens.total, r.key))
        return ranked[:limit]


def days(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


class UsageLedger(ABC):
    """Where usage is kept (see the module docstring). ``recorded`` counts what this
    process recorded, by model (what its Prometheus counters report)."""

    def __init__(self) -> None:
        self.recorded: dict[str, Totals] = {}

    async def record(self, record: UsageRecord) -> None:
        """Keep ``record`` (raises ``StateUnavailableError`` when the store is down)."""
        await self._store(record)
        self.recorded.setdefault(record.model, Totals()).add(record.tokens, record.cost_nano)

    @abstractmethod
    async def _store(self, record: UsageRecord) -> None: ...

    @abstractmethod
    async def summary(self, first: dt.date, last: dt.date) -> UsageSummary:
        """Totals of the days ``first``..``last`` (UTC, both included)."""

    async def prune_before(self, first_kept: dt.date) -> int:
        """Delete the usage of days before ``first_kept`` (``agent_core.retention``); how
        many rows (SQLite) or day keys (Redis) went."""
        raise NotImplementedError(f"{type(self).__name__} cannot sweep old usage")

    async def pseudonymise(self, person: str, pseudonym: str, *, dry_run: bool = False) -> int:
        """Count ``person``'s usage under ``pseudonym`` from now on (an erased person: the
        totals stay true, the person is gone); how many rows or days held them."""
        raise NotImplementedError(f"{type(self).__name__} cannot pseudonymise a person")

    @abstractmethod
    async def turn(self, turn_id: str) -> Totals:
        """One turn's totals (empty once forgotten, after ``TURN_DAYS``)."""

    async def close(self) -> None:
        return None


class MemoryUsageLedger(UsageLedger):
    """One process's ledger (tests, ``--ephemeral``); at most ``max_turns`` turns kept."""

    def __init__(self, *, max_turns: int = 10_000) -> None:
        super().__init__()
        self._days: dict[tuple[dt.date, Dimension, str], Totals] = {}
        self._turns: OrderedDict[str, Totals] = OrderedDict()
        self._max_turns = max_turns

    async def _store(self, record: UsageRecord) -> None:
        for dimension, key in record.keys().items():
            slot = self._days.setdefault((record.day, dimension, key), Totals())
            slot.add(record.tokens, record.cost_nano)
        turn = self._turns.setdefault(record.turn_id, Totals())
        turn.add(record.tokens, record.cost_nano)
        self._turns.move_to_end(record.turn_id)
        while len(self._turns) > self._max_turns:
            self._turns.popitem(last=False)

    async def summary(self, first: dt.date, last: dt.date) -> UsageSummary:
        wanted = set(days(first, last))
        return summarise(
            first,
            last,
            ((d, k, t) for (day, d, k), t in self._days.items() if day in wanted),
        )

    async def turn(self, turn_id: str) -> Totals:
        return self._turns.get(turn_id, Totals())

    async def prune_before(self, first_kept: dt.date) -> int:
        old = [key for key in self._days if key[0] < first_kept]
        for key in old:
            del self._days[key]
        return len(old)

    async def pseudonymise(self, person: str, pseudonym: str, *, dry_run: bool = False) -> int:
        theirs = [k for k in self._days if k[1] == "person" and k[2] == person]
        for day, dimension, _ in [] if dry_run else theirs:
            totals = self._days.pop((day, dimension, person))
            self._days.setdefault((day, dimension, pseudonym), Totals()).merge(totals)
        return len(theirs)


def summarise(
    first: dt.date, last: dt.date, rows: Iterable[tuple[Dimension, str, Totals]]
) -> UsageSummary:
    """A summary from ``(dimension, key, totals)`` rows; the overall total is the model
    dimension's sum (every call has exactly one model)."""
    summary = UsageSummary(first, last)
    for dimension, key, totals in rows:
        summary.add(dimension, key, totals)
        if dimension == "model":
            summary.total.merge(totals)
    return summary
