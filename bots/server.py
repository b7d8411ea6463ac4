"""How every Threadline HTTP server runs: one lifecycle for the Slack and Teams bots, and the
limits every server of ours (the console's too) keeps.

    serve(bot, app, host=..., port=...)    open the bot, listen, until SIGTERM (or
                                           cancelled): stop listening, drain its turns
    listen(app, host, port)                the aiohttp server, with ``HttpLimits``
    health(bot) / metrics(bot)             ``GET /healthz`` (503 while the state is down)
                                           and ``GET /metrics``, the same in every channel

**Slow clients**: aiohttp reads a request's head with no deadline of its own, so a client
that sends half a request (slowloris) would hold a connection for as long as it likes. Here
the connection is closed when a request's head has not arrived within
``HttpLimits.head_seconds`` of the connection opening or of the previous response (aiohttp's
keep-alive timer, which covers a connection that is waiting for a request's head), and a
request whose body has not arrived within ``body_seconds`` of its head is answered 408 and
its connection closed (``body_deadline``, the outermost middleware).

**Unauthenticated modes listen on loopback only**: ``listen_host`` keeps a bot whose requests
are not authenticated (Teams without ``MicrosoftAppId``) on 127.0.0.1 unless it is told
otherwise, and says so loudly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from agent_core.state_factory import State
from bots.metrics import ChannelMetrics
from bots.turns import TurnHost

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class HttpLimits:
    """How long a client may take to send a request.

    >>> HttpLimits().head_seconds, HttpLimits().body_seconds
    (10.0, 30.0)
    """

    head_seconds: float = 10.0
    """From the connection (or the previous response) to the request's complete head."""
    body_seconds: float = 30.0
    """From the request's head to its complete body."""


class Served(Protocol):
    """What ``serve`` runs: a channel's bot (``SlackBot``, ``TeamsBot``)."""

    state: State
    turns: TurnHost
    metrics: ChannelMetrics

    async def open(self) -> None: ...

    async def close(self, *, timeout: float = 30.0) -> None: ...


def listen_host(host: str, *, authenticated: bool, allow_remote: bool, what: str) -> str:
    """Where a bot may listen: ``host``, or 127.0.0.1 when its requests are not
    authenticated and nobody said it may be reached from elsewhere (logged loudly).

    >>> listen_host("0.0.0.0", authenticated=False, allow_remote=False, what="teams")
    '127.0.0.1'
    >>> listen_host("0.0.0.0", authenticated=True, allow_remote=False, what="teams")
    '0.0.0.0'
    """
    if authenticated or host in LOOPBACK_NAMES:
        return host
    if allow_remote:
        log.warning(
            "!!! %s: requests are NOT authenticated and the server listens on %s, as told: "
            "anyone who reaches it can claim to be anyone. !!!",
            what,
            host,
        )
        return host
    log.warning(
        "!!! %s: requests are not authenticated, so the server listens on %s only (not %s). "
        "To be reached from elsewhere, configure authentication, or accept the risk with "
        "--allow-unauthenticated-remote. !!!",
        what,
        LOOPBACK,
        host,
    )
    return LOOPBACK


def body_deadline(seconds: float) -> Any:
    """The middleware that answers 408 (and closes the connection) when a request's body
    has not arrived ``seconds`` after its head."""

    @web.middleware
    async def deadline(request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.body_exists or request.content.is_eof():
            response: web.StreamResponse = await handler(request)
            return response
        expired = asyncio.Event()
        timer = asyncio.get_running_loop().call_later(seconds, _cut, request, expired)
        try:
            response = await handler(request)
        except Exception:
            if not expired.is_set():
                raise
            log.info(
                "%s %s: the body was not sent within %gs", request.method, request.path, seconds
            )
            raise web.HTTPRequestTimeout() from None
        finally:
            timer.cancel()
        return response

    return deadline


def _cut(request: web.Request, expired: asyncio.Event) -> None:
    """The body is late: close the connection (a read waiting for it then fails)."""
    if request.content.is_eof() or request.transport is None:
        return
    expired.set()
    request.transport.close()


async def listen(
    app: web.Application,
    host: str,
    port: int,
    *,
    reuse_port: bool = False,
    limits: HttpLimits = HttpLimits(),
) -> web.AppRunner:
    """Serve ``app`` on ``host:port`` with ``limits``; the runner (``cleanup()`` stops it).
    ``reuse_port`` binds with ``SO_REUSEPORT`` (several processes on one port, Linux)."""
    app.middlewares.insert(0, body_deadline(limits.body_seconds))
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, keepalive_timeout=limits.head_seconds
    )
    await runner.setup()
    await web.TCPSite(runner, host, port, reuse_port=reuse_port or None).start()
    return runner


def bound_port(runner: web.AppRunner, port: int) -> int:
    """The port ``runner`` listens on (the one the system chose for port 0)."""
    return int(runner.addresses[0][1]) if runner.addresses else port


async def serve(
    bot: Served,
    app: web.Application,
    *,
    host: str,
    port: int,
    logger: logging.Logger,
    reuse_port: bool = False,
    alongside: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> None:
    """Open ``bot`` and serve ``app`` until cancelled or SIGTERM (and ``alongside``, e.g.
    Slack's Socket Mode connection, while it does); then stop listening and finish the
    turns this process holds (``bot.close``)."""
    terminated = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
        # before listening: a SIGTERM the moment the port opens still drains gracefully
        loop.add_signal_handler(signal.SIGTERM, terminated.set)
    runner: web.AppRunner | None = None
    try:
        await bot.open()
        runner = await listen(app, host, port, reuse_port=reuse_port)
        where = f"http://{host}:{bound_port(runner, port)}"
        logger.info("listening on %s (process %d)", where, os.getpid())
        async with alongside() if alongside is not None else _nothing():
            await terminated.wait()
        logger.info("SIGTERM; finishing the turns of process %d", os.getpid())
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGTERM)
        if runner is not None:
            await runner.cleanup()
        await bot.close()


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


def health_route(bot: Served) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``GET /healthz``: the state backend's health and this process's turns; 503 while
    the state is down (the same body in every channel)."""

    async def healthz(request: web.Request) -> web.Response:
        health = await bot.state.health()
        pending: int | None = None
        with contextlib.suppress(Exception):  # the queue shares the backend health reports on
            pending = await bot.state.turns.pending()
        body = {
            "ok": health.ok,
            "state": health.model_dump(),
            "running_turns": bot.turns.running,
            "queued_turns": pending,
            "process": os.getpid(),
        }
        return web.json_response(body, status=200 if health.ok else 503)

    return healthz


def metrics_route(bot: Served) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``GET /metrics``: the bot's ``ChannelMetrics`` in Prometheus' text format."""

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=bot.metrics.render(), content_type="text/plain", charset="utf-8")

    return metrics
