"""The Redis boundary: one client factory, one translation of Redis failures, one probe.

Every Redis-backed store wraps its public coroutines in ``@redis_boundary``: a lost
connection, a timeout, a server still loading its data set or refusing writes becomes
``StateUnavailableError``, the only error the agent and the bots reason about. Other Redis
errors are programming errors and propagate unchanged. The client reconnects on the next
command by itself, so everything recovers without a restart once Redis is back.

The boundary also restores cancellations redis-py loses: it awaits ``asyncio.wait_for``,
which on Python 3.11 returns normally when a cancellation arrives as the awaited write
completes, so a cancelled task (the user's Stop, a shutdown) would carry on. When the
current task was cancelled during the call and the call still returned, the boundary
raises ``CancelledError`` itself.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from agent_core.errors import StateUnavailableError
from agent_core.masking import mask_url
from agent_core.state.health import StateHealth

if TYPE_CHECKING:
    from redis.asyncio import Redis

P = ParamSpec("P")
T = TypeVar("T")

_OUTAGE_REPLIES = ("LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "MISCONF")


def connect_redis(url: str, *, timeout: float = 5.0, max_connections: int = 64) -> Redis:
    """A ``redis.asyncio`` client tuned to fail fast while Redis is down (one retry, short
    timeouts) and to reconnect by itself when it returns. Replies are decoded to ``str``.

    Its pool *waits* (up to ``timeout``) for a free connection when all ``max_connections``
    are busy: under load a turn queues for a connection instead of failing as if Redis were
    down (redis-py's default pool raises at once).

    >>> client = connect_redis("redis://127.0.0.1:6379/0")
    >>> client.get_connection_kwargs()["decode_responses"]
    True
    """
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=min(timeout, 2.0),
        retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1),
        health_check_interval=15,
    )
    return Redis.from_pool(pool)


def is_outage(error: BaseException) -> bool:
    """Whether a Redis error means "Redis cannot serve us now" (as opposed to a bug)."""
    from redis import exceptions

    if isinstance(error, exceptions.ConnectionError | exceptions.TimeoutError | OSError):
        return True
    return isinstance(error, exceptions.ResponseError) and str(error).startswith(_OUTAGE_REPLIES)


def unavailable(error: BaseException) -> StateUnavailableError:
    return StateUnavailableError(f"Redis is unavailable ({type(error).__name__}: {error})")


def cancellations() -> int:
    """How many cancellations of the current task are pending (0 outside a task)."""
    task = asyncio.current_task()
    return 0 if task is None else task.cancelling()


def restore_lost_cancellation(before: int) -> None:
    """Raise ``CancelledError`` if the task was cancelled since ``cancellations()`` was
    ``before`` and the cancellation was swallowed on the way (see the module docstring)."""
    if cancellations() > before:
        raise asyncio.CancelledError


@asynccontextmanager
async def translated_errors() -> AsyncIterator[None]:
    """``async with translated_errors():`` - the boundary, for code that is not one call."""
    from redis.exceptions import RedisError

    before = cancellations()
    try:
        yield
    except (RedisError, OSError) as error:
        if is_outage(error):
            raise unavailable(error) from error
        raise
    restore_lost_cancellation(before)


def redis_boundary(fn: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorate a Redis-backed coroutine so outages surface as ``StateUnavailableError``.

    ``translated_errors`` spelled out: every Redis call of every store passes here, and an
    ``async with`` of a generator-based context manager costs 10-15 µs a call."""

    @functools.wraps(fn)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        from redis.exceptions import RedisError

        before = cancellations()
        try:
            result = await fn(*args, **kwargs)
        except (RedisError, OSError) as error:
            if is_outage(error):
                raise unavailable(error) from error
            raise
        restore_lost_cancellation(before)
        return result

    return guarded


def redacted(url: str) -> str:
    """``url`` without its password, for logs and health details.

    >>> redacted("redis://user:secret@cache:6379/0")
    'redis://user:***@cache:6379/0'
    """
    return mask_url(url)


async def redis_health(client: Redis) -> StateHealth:
    """PING Redis: green with the round-trip time, or red with the reason."""
    started = time.perf_counter()
    try:
        async with translated_errors():
            await client.ping()
    except StateUnavailableError as error:
        return StateHealth(ok=False, backend="redis", detail=str(error))
    latency = (time.perf_counter() - started) * 1000
    return StateHealth(ok=True, backend="redis", latency_ms=round(latency, 3))
