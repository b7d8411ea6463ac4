"""Transports for ``SlackBot``: an aiohttp HTTP server or a Socket Mode connection.

HTTP mode serves ``POST /slack/events`` (events, commands and interactions; bolt verifies
the signature), ``GET /healthz`` (the state backend's health: 503 while it is down),
``GET /metrics`` (Prometheus) and, for multi-workspace
apps, ``GET /slack/install`` + ``GET /slack/oauth_redirect``. Socket Mode needs no public
URL: the app token opens a WebSocket to Slack; the HTTP server then only serves health,
metrics and the OAuth pages (never ``/slack/events``, whose signatures are not checked in
that mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

from bots.slack.bot import SlackBot

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


def build_web_app(bot: SlackBot) -> web.Application:
    """The aiohttp application of HTTP mode (see the module docstring)."""

    async def events(request: web.Request) -> web.Response:
        if not request.headers.get("X-Slack-Request-Timestamp", "").isdigit():
            return web.Response(status=401)  # unsigned, or a timestamp bolt cannot parse
        try:
            bolt_request = await to_bolt_request(request)
        except ValueError:  # a body that is not the JSON / form it claims to be
            return web.Response(status=400)
        return await to_aiohttp_response(await bot.app.async_dispatch(bolt_request))

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

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=bot.metrics.render(), content_type="text/plain")

    app = web.Application(client_max_size=1024 * 1024)
    if bot.settings.mode == "http":  # Socket Mode skips signature checks: never expose it
        app.router.add_post(EVENTS_PATH, events)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    flow = bot.app.oauth_flow
    if flow is not None:

        async def install(request: web.Request) -> web.Response:
            return await to_aiohttp_response(
                await flow.handle_installation(await to_bolt_request(request))
            )

        async def oauth_redirect(request: web.Request) -> web.Response:
            return await to_aiohttp_response(
                await flow.handle_callback(await to_bolt_request(request))
            )

        app.router.add_get(flow.install_path, install)
        app.router.add_get(flow.redirect_uri_path, oauth_redirect)
    return app


async def serve_http(
    bot: SlackBot, *, host: str, port: int, reuse_port: bool = False
) -> web.AppRunner:
    """Start HTTP mode; returns the runner (``await runner.cleanup()`` to stop).

    ``reuse_port`` binds with ``SO_REUSEPORT``: several processes listen on one port and
    the kernel spreads connections among them (``threadline slack --processes N``)."""
    runner = web.AppRunner(build_web_app(bot), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    log.info(
        "threadline slack: listening on http://%s:%d%s (process %d)",
        host, bound, EVENTS_PATH, os.getpid(),
    )  # fmt: skip
    return runner


def socket_mode_handler(bot: SlackBot) -> AsyncSocketModeHandler:
    """The Socket Mode handler (``await handler.connect_async()`` to go online)."""
    token = bot.settings.app_token
    if token is None:
        raise ValueError("Socket Mode needs SLACK_APP_TOKEN")
    return AsyncSocketModeHandler(bot.app, token.get_secret_value(), web_client=bot.client)


async def run_until_cancelled(bot: SlackBot, *, reuse_port: bool = False) -> None:
    """Serve in the configured mode until cancelled or SIGTERM; then stop taking
    deliveries and finish the turns this process holds (``bot.close``)."""
    settings = bot.settings
    await bot.open()
    runner = await serve_http(bot, host=settings.host, port=settings.port, reuse_port=reuse_port)
    handler = None
    terminated = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
        loop.add_signal_handler(signal.SIGTERM, terminated.set)
    try:
        if settings.mode == "socket":
            handler = socket_mode_handler(bot)
            await handler.connect_async()  # type: ignore[no-untyped-call]
            log.info("threadline slack: connected in Socket Mode (process %d)", os.getpid())
        await terminated.wait()
        log.info("threadline slack: SIGTERM; finishing the turns of process %d", os.getpid())
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGTERM)
        if handler is not None:
            with contextlib.suppress(Exception):
                await handler.close_async()  # type: ignore[no-untyped-call]
        await runner.cleanup()
        await bot.close()
