"""Per-user quotas: a sliding-window ``RateLimiter`` and the ``RateLimitHook`` that applies it.

A sliding window counts the hits of the last ``window`` seconds exactly (no burst at a
fixed window's edge); when the limit is reached, ``retry_after`` is when the oldest counted
hit leaves the window. Refused attempts are not counted.

The same store keeps spending counters (``spend`` / ``spent``): an amount added atomically
under a key that lives until a fixed moment (the end of a budget's day or month), which is
how LLM budgets (``agent_core.usage.budgets``) hold across processes.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Self

from pydantic import BeforeValidator

from agent_core.clock import SYSTEM_CLOCK, utcnow
from agent_core.errors import AgentError
from agent_core.extensions.hooks import LifecycleHook

if TYPE_CHECKING:
    from agent_core.state.turn_writes import TurnWrites
    from agent_core.users import User


@dataclass(frozen=True)
class RateDecision:
    """Whether one more hit fits; ``retry_after`` seconds until it would when it does not.

    >>> RateDecision(allowed=False, remaining=0, retry_after=42.0).retry_after
    42.0
    """

    allowed: bool
    remaining: int
    retry_after: float = 0.0


class RateLimiter(ABC):
    """Counts hits per key in a sliding window; ``hit`` records one when it fits.

    >>> import asyncio
    >>> limiter = MemoryRateLimiter(clock=lambda: 100.0)
    >>> [asyncio.run(limiter.hit("u1", limit=2, window=60)).allowed for _ in range(3)]
    [True, True, False]
    """

    @abstractmethod
    async def hit(self, key: str, *, limit: int, window: float) -> RateDecision: ...

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """This limiter as a queued turn uses it: itself, but on Redis
        (``agent_core.state.quotas_redis``)."""
        return self

    @abstractmethod
    async def spend(self, key: str, amount: int, *, ttl: float) -> int:
        """Add ``amount`` to the counter ``key`` (created at 0, gone ``ttl`` seconds from now
        by the store's own clock); the new total.

        The caller names the period in ``key`` (``...:day:2026-11-26``) by its clock, and the
        store only forgets the counter some time after it: relative, so a caller whose clock
        differs from the store's (another process, a test's pinned date) counts the same."""

    @abstractmethod
    async def spent(self, keys: Sequence[str]) -> list[int]:
        """The counters ``keys`` (0 for one that does not exist or has expired)."""

    async def close(self) -> None:
        return None


class MemoryRateLimiter(RateLimiter):
    """One process's limiter (tests, ``--ephemeral``): a deque of hit times per key.

    >>> import asyncio
    >>> now = [0.0]
    >>> limiter = MemoryRateLimiter(clock=lambda: now[0])
    >>> _ = asyncio.run(limiter.hit("u1", limit=1, window=60))
    >>> now[0] = 15.0
    >>> asyncio.run(limiter.hit("u1", limit=1, window=60)).retry_after
    45.0
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._hits: dict[str, deque[float]] = {}
        self._spent: dict[str, tuple[int, float]] = {}
        self._clock = clock
        self._wall_clock = wall_clock

    async def spend(self, key: str, amount: int, *, ttl: float) -> int:
        now = self._wall_clock()
        if len(self._spent) > 10_000:  # bounded: expired counters go
            self._spent = {k: v for k, v in self._spent.items() if v[1] > now}
        total, ends = self._spent.get(key, (0, 0.0))
        if ends <= now:
            total = 0
        self._spent[key] = (total + amount, now + ttl)
        return total + amount

    async def spent(self, keys: Sequence[str]) -> list[int]:
        now = self._wall_clock()
        found = [self._spent.get(key) for key in keys]
        return [value[0] if value and value[1] > now else 0 for value in found]

    async def hit(self, key: str, *, limit: int, window: float) -> RateDecision:
        now = self._clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - window:
            hits.popleft()
        if len(hits) >= limit:
            retry = hits[0] + window - now if hits else window
            return RateDecision(False, 0, retry)
        hits.append(now)
        return RateDecision(True, limit - len(hits))


_WINDOWS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}


def parse_rate_limit(value: str | None) -> tuple[int, float] | None:
    """``THREADLINE_RATE_LIMIT`` as ``(messages, seconds)`` per user; ``None``: no quota.

    Accepts ``N/SECONDS`` or ``N/second|minute|hour|day`` (plural too); ``""``, ``off``,
    ``none`` and ``0`` turn the quota off.

    >>> parse_rate_limit("20/3600"), parse_rate_limit("30/minutes"), parse_rate_limit("off")
    ((20, 3600.0), (30, 60.0), None)
    """
    text = (value or "").strip().lower()
    if text in ("", "off", "none", "0"):
        return None
    count, _, window = text.partition("/")
    window = window.strip() or "hour"
    try:
        limit = int(count)
        seconds = _WINDOWS.get(window.removesuffix("s")) or float(window)
    except ValueError:
        raise ValueError(
            f"THREADLINE_RATE_LIMIT must look like 20/3600, 120/hour or off, not {value!r}"
        ) from None
    if limit < 1 or seconds <= 0:
        raise ValueError("THREADLINE_RATE_LIMIT needs a positive count and window")
    return limit, seconds


def _rate_limit(value: object) -> tuple[int, float] | None:
    if value is None or isinstance(value, tuple | list):
        return None if value is None else (int(value[0]), float(value[1]))
    if isinstance(value, int):  # a count per hour
        return (value, 3600.0) if value > 0 else None
    return parse_rate_limit(str(value))


RateLimit = Annotated[tuple[int, float] | None, BeforeValidator(_rate_limit)]
"""A per-user quota setting: ``"20/3600"``, ``"120/hour"``, ``"off"``, a count per hour, or
a ``(messages, seconds)`` pair; ``None`` is no quota."""


def describe_duration(seconds: float) -> str:
    """A friendly duration, rounded up (a user told "2 minutes" must not be early).

    >>> [describe_duration(s) for s in (1, 30, 61, 3600, 3601, 7201, 172800)]
    ['1 second', '30 seconds', '2 minutes', '60 minutes', '61 minutes', '3 hours', '2 days']
    """
    whole = max(1, math.ceil(seconds))
    for unit, size, below in (("second", 1, 60), ("minute", 60, 7200), ("hour", 3600, 172800)):
        if whole < below:
            count = math.ceil(whole / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = math.ceil(whole / 86400)
    return f"{count} days"


def describe_window(seconds: float) -> str:
    """ "hour", "day", "minute" for exact units, else the duration.

    >>> describe_window(3600), describe_window(1800)
    ('hour', '30 minutes')
    """
    named: dict[float, str] = {60: "minute", 3600: "hour", 86400: "day", 604800: "week"}
    return named.get(seconds) or describe_duration(seconds)


class RateLimitHook(LifecycleHook):
    """Refuses a user's message once they sent ``limit`` in the last ``window`` seconds,
    telling them plainly when they can ask again. Members of ``exempt_groups`` are not
    counted. The refusal is an ``AgentError``, so the user sees the message and nothing of
    the turn is stored. With a Redis limiter the quota holds across every process.

    >>> hook = RateLimitHook(MemoryRateLimiter(), limit=20, window=3600)
    >>> print(hook.refusal(retry_after=600))  # doctest: +ELLIPSIS
    You have reached your limit of 20 messages per hour. You can ask again in 10 minutes (at ...
    """

    def __init__(
        self,
        limiter: RateLimiter,
        *,
        limit: int,
        window: float,
        exempt_groups: Sequence[str] = (),
        key: Callable[[User], str] = lambda user: user.id,
        wall_clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be at least 1 and window positive")
        self.limiter = limiter
        self.limit = limit
        self.window = window
        self.exempt_groups = frozenset(exempt_groups)
        self._key = key
        self._wall_clock = wall_clock

    def refusal(self, *, retry_after: float) -> str:
        when = self._wall_clock() + dt.timedelta(seconds=math.ceil(retry_after))
        return (
            f"You have reached your limit of {self.limit} messages per "
            f"{describe_window(self.window)}. You can ask again in "
            f"{describe_duration(retry_after)} (at {when:%H:%M} UTC)."
        )

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The hook with the turn's view of its limiter (on Redis: the hit the turn's start
        made, ``agent_core.state.quotas_redis``)."""
        limiter = self.limiter.for_turn(writes)
        if limiter is self.limiter:
            return self
        view = copy.copy(self)
        view.limiter = limiter
        return view

    async def before_message(self, user: User, message: str) -> str | None:
        if self.exempt_groups.intersection(user.group_memberships):
            return None
        decision = await self.limiter.hit(
            f"quota:{self._key(user)}", limit=self.limit, window=self.window
        )
        if not decision.allowed:
            raise AgentError(self.refusal(retry_after=decision.retry_after))
        return None
