"""``Budgets``: the ``[budgets]`` limits, counted in the quota store across processes.

Each call's tokens and cost are added (``charge``) to one counter per limit that covers it:
``budget:person:{id}:...``, ``budget:group:{name}:...``, ``budget:profile:{name}:...``,
each ending with its period (``day:2026-11-26``, ``month:2026-11``) and gone after it. A
message is refused (``BudgetHook``) while any counter that covers the asker has reached
its limit, with one sentence saying which budget and when it resets. A turn that crosses
a budget mid-way finishes the call that crossed it and stops (``UsageRecorder``).

>>> import asyncio, datetime as dt
>>> from agent_core.state.quotas import MemoryRateLimiter
>>> from agent_core.usage.budget_settings import BudgetLimit
>>> from agent_core.users import User
>>> now = dt.datetime(2026, 11, 26, 15, 30, tzinfo=dt.UTC)
>>> budgets = Budgets([BudgetLimit(scope="person", period="day", tokens=100)],
...                   counters=MemoryRateLimiter(), clock=lambda: now)
>>> ana = User(id="slack:T1:U1", group_memberships=["user"])
>>> over = asyncio.run(budgets.charge(ana, None, tokens=120, cost_nano=None))
>>> print(over.sentence())
You have used your daily AI budget of 100 tokens; it resets at 00:00 UTC tomorrow (27 November).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_core.clock import utcnow
from agent_core.state.quotas import RateLimiter
from agent_core.usage.budget_settings import BudgetLimit
from agent_core.users import User

logger = logging.getLogger("threadline.usage")


def period_bounds(period: str, now: dt.datetime) -> tuple[str, dt.datetime]:
    """The period's name (``day:2026-11-26``, ``month:2026-11``) and when it ends (UTC).

    >>> period_bounds("month", dt.datetime(2026, 12, 31, 23, tzinfo=dt.UTC))
    ('month:2026-12', datetime.datetime(2027, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
    """
    now = now.astimezone(dt.UTC)
    if period == "day":
        start = dt.datetime(now.year, now.month, now.day, tzinfo=dt.UTC)
        return f"day:{start:%Y-%m-%d}", start + dt.timedelta(days=1)
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return f"month:{now:%Y-%m}", dt.datetime(year, month, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Exceeded:
    """A budget that is used up: which, how much was spent, when it resets."""

    limit: BudgetLimit
    spent: int
    resets_at: dt.datetime
    now: dt.datetime

    def sentence(self) -> str:
        """What the person is told (one sentence)."""
        limit = self.limit
        adjective = "daily" if limit.period == "day" else "monthly"
        if limit.amount == 0:
            return (
                f"The {adjective} AI budget {self._whose()} is zero, so I cannot answer; "
                "an admin can change it in [budgets]."
            )
        return (
            f"{self._owner()} used {self._possessive()} {adjective} AI budget of "
            f"{self._amount()}; it resets {self._when()}."
        )

    def _whose(self) -> str:
        match self.limit.scope:
            case "group":
                return f"of the {self.limit.group} group"
            case "profile":
                return f"of the {self.limit.profile} assistant"
            case _:
                return "for you"

    def _owner(self) -> str:
        match self.limit.scope:
            case "group":
                return f"Your group {self.limit.group} has"
            case "profile":
                return f"The {self.limit.profile} assistant has"
            case _:
                return "You have"

    def _possessive(self) -> str:
        return "your" if self.limit.scope == "person" else "its"

    def _amount(self) -> str:
        if self.limit.tokens is not None:
            return f"{self.limit.tokens:,} tokens"
        return f"${self.limit.cost:,.2f}"

    def _when(self) -> str:
        at = self.resets_at
        if at.date() == (self.now + dt.timedelta(days=1)).date():
            return f"at 00:00 UTC tomorrow ({at.day} {at:%B})"
        return f"on {at.day} {at:%B} at 00:00 UTC"


class Budgets:
    """The configured limits over ``counters`` (the state's quota store); see the module."""

    def __init__(
        self,
        limits: Sequence[BudgetLimit],
        *,
        counters: RateLimiter,
        admins_exempt: bool = True,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.limits = list(limits)
        self.counters = counters
        self.admins_exempt = admins_exempt
        self._clock = clock

    def covering(self, user: User, profile: str | None) -> list[BudgetLimit]:
        """The limits that count ``user``'s use of ``profile`` (none for an exempt admin)."""
        if self.admins_exempt and user.is_admin:
            return []
        return [limit for limit in self.limits if _covers(limit, user, profile)]

    def key(self, limit: BudgetLimit, user: User, now: dt.datetime) -> str:
        period, _ = period_bounds(limit.period, now)
        match limit.scope:
            case "group":
                owner = f"group:{limit.group}"
            case "profile":
                owner = f"profile:{limit.profile}"
            case _:
                owner = f"person:{user.id}"
        suffix = f":in:{limit.profile}" if limit.scope == "person" and limit.profile else ""
        return f"budget:{owner}{suffix}:{period}:{limit.unit}"

    async def check(self, user: User, profile: str | None) -> Exceeded | None:
        """The first covering budget already used up, else ``None``."""
        limits = self.covering(user, profile)
        if not limits:
            return None
        now = self._clock()
        spent = await self.counters.spent([self.key(limit, user, now) for limit in limits])
        return _first_over(limits, spent, now)

    async def standing(self, user: User, profile: str | None) -> list[str]:
        """One line per budget covering ``user`` in ``profile``: how much of it is used
        (what a person's home shows).

        >>> import asyncio
        >>> from agent_core.state.quotas import MemoryRateLimiter
        >>> budgets = Budgets([BudgetLimit(scope="person", period="day", tokens=1000)],
        ...                   counters=MemoryRateLimiter())
        >>> asyncio.run(budgets.standing(User(id="u1"), None))
        ['Your daily budget: 0 of 1,000 tokens used']
        """
        limits = self.covering(user, profile)
        if not limits:
            return []
        now = self._clock()
        spent = await self.counters.spent([self.key(limit, user, now) for limit in limits])
        lines = []
        for limit, amount in zip(limits, spent, strict=True):
            adjective = "daily" if limit.period == "day" else "monthly"
            used = (
                f"{amount:,} of {limit.amount:,} tokens"
                if limit.unit == "tokens"
                else f"${amount / 1_000_000_000:,.2f} of ${limit.cost or 0:,.2f}"
            )
            lines.append(f"{_whose_budget(limit)} {adjective} budget: {used} used")
        return lines

    async def charge(
        self, user: User, profile: str | None, *, tokens: int, cost_nano: int | None
    ) -> Exceeded | None:
        """Add one call's use to every covering budget; the first one it used up."""
        limits = self.covering(user, profile)
        now = self._clock()
        totals: list[int] = []
        for limit in limits:
            amount = tokens if limit.unit == "tokens" else cost_nano
            if amount is None:  # no price for the model: a cost budget cannot count it
                logger.warning("a cost budget cannot count a call to a model with no price")
                amount = 0
            _, ends = period_bounds(limit.period, now)
            # the key names the period by this clock; the store forgets it a day after
            ttl = (ends + dt.timedelta(days=1) - now).total_seconds()
            key = self.key(limit, user, now)
            totals.append(await self.counters.spend(key, amount, ttl=ttl))
        return _first_over(limits, totals, now)


def _whose_budget(limit: BudgetLimit) -> str:
    match limit.scope:
        case "group":
            return f"The {limit.group} group's"
        case "profile":
            return f"The {limit.profile} assistant's"
        case _:
            return "Your"


def _covers(limit: BudgetLimit, user: User, profile: str | None) -> bool:
    match limit.scope:
        case "group":
            return limit.group in user.group_memberships
        case "profile":
            return limit.profile == profile
        case _:
            in_group = limit.group is None or limit.group in user.group_memberships
            return in_group and (limit.profile is None or limit.profile == profile)


def _first_over(
    limits: Sequence[BudgetLimit], spent: Sequence[int], now: dt.datetime
) -> Exceeded | None:
    for limit, amount in zip(limits, spent, strict=True):
        if amount >= limit.amount:
            _, ends = period_bounds(limit.period, now)
            return Exceeded(limit, amount, ends, now)
    return None
