"""Transports for ``SlackBot``: an aiohttp HTTP server or a Socket Mode connection.

HTTP mode serves ``POST /slack/events`` (events, commands and interactions; bolt verifies
the signature), ``GET /healthz``, ``GET /metrics`` (Prometheus) and, for multi-workspace
apps, ``GET /slack/install`` + ``GET /slack/oauth_redirect``. Socket Mode needs no public
URL: the app token opens a WebSocket to Slack; the HTTP server then only serves health,
metrics and the OAuth pages (never ``/slack/events``, whose signatures are not checked in
that mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

from bots.slack_bot import SlackBot

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
        return web.json_response({"ok": True, "running_turns": bot.turns.running})

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


async def serve_http(bot: SlackBot, *, host: str, port: int) -> web.AppRunner:
    """Start HTTP mode; returns the runner (``await runner.cleanup()`` to stop)."""
    runner = web.AppRunner(build_web_app(bot), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("threadline slack: listening on http://%s:%d%s", host, port, EVENTS_PATH)
    return runner


def socket_mode_handler(bot: SlackBot) -> AsyncSocketModeHandler:
    """The Socket Mode handler (``await handler.connect_async()`` to go online)."""
    token = bot.settings.app_token
    if token is None:
        raise ValueError("Socket Mode needs SLACK_APP_TOKEN")
    return AsyncSocketModeHandler(bot.app, token.get_secret_value(), web_client=bot.client)


async def run_until_cancelled(bot: SlackBot) -> None:
    """Serve in the configured mode until cancelled; then let running turns finish."""
    settings = bot.settings
    await bot.open()
    runner = await serve_http(bot, host=settings.host, port=settings.port)
    handler = None
    try:
        if settings.mode == "socket":
            handler = socket_mode_handler(bot)
            await handler.connect_async()  # type: ignore[no-untyped-call]
            log.info("threadline slack: connected in Socket Mode")
        await asyncio.Event().wait()
    finally:
        if handler is not None:
            with contextlib.suppress(Exception):
                await handler.close_async()  # type: ignore[no-untyped-call]
        await runner.cleanup()
        await bot.close()
