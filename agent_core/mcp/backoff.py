"""``Backoff``: how long a supervised MCP session waits before it is opened again.

Each failure in a row doubles the wait (with some jitter, so many processes do not retry in
step), up to ``most``; a session that stays up ``stable_after`` seconds starts the count
again, so a server that crashes at once on every start is not restarted in a tight loop.

>>> backoff = Backoff(first=1.0, most=8.0, jitter=0.0)
>>> [backoff.next() for _ in range(5)]
[1.0, 2.0, 4.0, 8.0, 8.0]
>>> backoff.up(since=0.0, now=60.0)
>>> backoff.next()
1.0
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays between attempts; see the module docstring.

    >>> Backoff(first=0.5, jitter=0.0).next()
    0.5
    """

    first: float = 1.0
    most: float = 60.0
    jitter: float = 0.2
    """Up to this fraction of a delay is added at random."""
    stable_after: float = 30.0
    failures: int = field(default=0, init=False)

    def next(self) -> float:
        """The wait before the next attempt (one more failure in a row)."""
        delay: float = min(self.most, self.first * 2.0**self.failures)
        self.failures += 1
        return delay * (1 + random.uniform(0, self.jitter)) if self.jitter else delay

    def up(self, *, since: float, now: float) -> None:
        """A session that opened at ``since`` is still up at ``now``: once it has been up
        long enough, failures count from zero again."""
        if now - since >= self.stable_after:
            self.failures = 0
