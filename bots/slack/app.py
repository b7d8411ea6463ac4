"""``threadline slack``: run the Slack bot (the demo agent by default) over HTTP or Socket Mode.

    settings (SlackSettings) -> state -> clients, identity, agent -> SlackBot -> transport

State (``agent_core.state``): conversations, memory, turns, installations and caches live
in SQLite files in ``THREADLINE_DATA_DIR`` by default, in Redis when ``REDIS_URL`` is set
(required for ``--processes N``), in memory with ``--ephemeral``.

Transports: HTTP mode serves ``POST /slack/events`` (events, commands and interactions: the
signature is checked and the payload's shape read before bolt sees it, and no request gets
a 5xx: ``bots.slack.ingress``), ``GET /healthz`` (the state backend's health: 503 while it is
down), ``GET /metrics`` (Prometheus) and, for multi-workspace apps, ``GET /slack/install`` +
``GET /slack/oauth_redirect``. The server's lifecycle (SIGTERM drains the turns) and its
limits on slow clients are every channel's (``bots.server``). Socket Mode needs no public
URL: the app token opens a WebSocket to Slack; the HTTP server then only serves health,
metrics and the OAuth pages (never ``/slack/events``, whose signatures are not checked in
that mode).

Imports only the standard library at module level (the CLI imports every subcommand to build
its parser); bolt, the agent and aiohttp load when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    from agent_core.agent import Agent
    from agent_core.retention import RetentionSettings
    from agent_core.settings import Section
    from agent_core.state_factory import State, StateSettings
    from agent_core.users import UserResolver
    from bots.files import SharedFiles
    from bots.profiles import ProfileRouter
    from bots.slack.bot import SlackBot
    from bots.slack.settings import SlackSettings

    AgentFactory = Callable[[State, UserResolver], Agent | ProfileRouter]

log = logging.getLogger(__name__)

MAX_SOCKET_CONNECTIONS = 10
"""Slack allows at most 10 simultaneous Socket Mode connections per app."""
EVENTS_PATH = "/slack/events"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments, add_log_level

    add_config_arguments(parser)
    parser.add_argument(
        "--mode",
        choices=["http", "socket"],
        help="transport (default: socket when SLACK_APP_TOKEN is set, else http)",
    )
    parser.add_argument("--host", help="HTTP listen address (default 0.0.0.0 or $HOST)")
    parser.add_argument("--port", type=int, help="HTTP port (default 3000 or $PORT)")
    parser.add_argument("--command", help="slash command name (default /ask or $SLACK_COMMAND)")
    add_log_level(parser)
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="use the scripted demo model even when ANTHROPIC_API_KEY is set",
    )
    parser.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep all state in memory: nothing survives a restart (one process only)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="run N bot processes sharing REDIS_URL on one port (SO_REUSEPORT, Linux); "
        "in Socket Mode each opens its own connection (at most 10)",
    )


async def serve(
    settings: SlackSettings,
    state_settings: StateSettings,
    build_agent: AgentFactory,
    *,
    reuse_port: bool = False,
    files: SharedFiles | None = None,
    retention: RetentionSettings | None = None,
) -> None:
    """Run one bot process until cancelled: state, identity, agent, quota, transport, and
    the retention sweep (``agent_core.retention.sweeping``)."""
    from agent_core.retention import sweeping
    from agent_core.state_factory import build_state
    from bots.serving import add_quota
    from bots.slack.bot import SlackBot
    from bots.slack.clients import build_user_resolver, default_clients
    from bots.usage_metrics import watch_usage

    state = build_state(state_settings)
    log.info("threadline slack: state in %s", state_settings.describe())
    try:
        clients = default_clients(settings, state)
        agent = build_agent(state, build_user_resolver(settings, clients, state.cache))
        add_quota(agent, state, settings.rate_limit)
        bot = SlackBot(agent, settings, state=state, clients=clients, files=files)
        watch_usage(bot.metrics.registry, state.usage)  # LLM tokens and cost on /metrics
        async with sweeping(state, retention):  # [retention]: one process per period sweeps
            await run_until_cancelled(bot, reuse_port=reuse_port)
    finally:
        await state.aclose()


def build_web_app(bot: SlackBot) -> web.Application:
    """The aiohttp application of HTTP mode (see the module docstring)."""
    from aiohttp import web
    from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

    from bots.mcp import add_callback
    from bots.server import health_route, metrics_route
    from bots.slack.ingress import handle_events

    async def events(request: web.Request) -> web.Response:
        return await handle_events(bot, request)  # every answer < 500 (bots.slack.ingress)

    app = web.Application(client_max_size=1024 * 1024)
    if bot.settings.mode == "http":  # Socket Mode skips signature checks: never expose it
        app.router.add_post(EVENTS_PATH, events)
    app.router.add_get("/healthz", health_route(bot))
    app.router.add_get("/metrics", metrics_route(bot))
    add_callback(app, bot.agent, bot.ask_again)  # people's MCP sign-ins come back here
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
    """Start HTTP mode (``bots.server.listen``: with its limits on slow clients); returns
    the runner (``await runner.cleanup()`` to stop). ``reuse_port`` binds with
    ``SO_REUSEPORT``: several processes listen on one port and the kernel spreads
    connections among them (``threadline slack --processes N``)."""
    from bots.server import bound_port, listen

    runner = await listen(build_web_app(bot), host, port, reuse_port=reuse_port)
    bound = bound_port(runner, port)
    log.info("threadline slack: listening on http://%s:%d%s", host, bound, EVENTS_PATH)
    return runner


def socket_mode_handler(bot: SlackBot) -> AsyncSocketModeHandler:
    """The Socket Mode handler (``await handler.connect_async()`` to go online)."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    token = bot.settings.app_token
    if token is None:
        raise ValueError("Socket Mode needs SLACK_APP_TOKEN")
    return AsyncSocketModeHandler(bot.app, token.get_secret_value(), web_client=bot.client)


async def run_until_cancelled(bot: SlackBot, *, reuse_port: bool = False) -> None:
    """Serve in the configured mode until cancelled or SIGTERM; then stop taking
    deliveries and finish the turns this process holds (``bots.server.serve``)."""
    from bots.server import serve as serve_until_terminated

    settings = bot.settings

    @contextlib.asynccontextmanager
    async def socket_mode() -> AsyncIterator[None]:
        handler = socket_mode_handler(bot)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        log.info("threadline slack: connected in Socket Mode (process %d)", os.getpid())
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await handler.close_async()  # type: ignore[no-untyped-call]

    await serve_until_terminated(
        bot,
        build_web_app(bot),
        host=settings.host,
        port=settings.port,
        logger=log,
        reuse_port=reuse_port,
        alongside=socket_mode if settings.mode == "socket" else None,
    )


def check_processes(settings: SlackSettings, state: StateSettings, processes: int) -> None:
    """Refuse process counts that cannot work, naming what to change."""
    from bots.processes import check_processes as check_shared

    check_shared(processes, state)
    # Slack-only: Slack caps the Socket Mode connections of one app (HTTP mode has no cap)
    if settings.mode == "socket" and processes > MAX_SOCKET_CONNECTIONS:
        raise ValueError(
            f"Slack allows at most {MAX_SOCKET_CONNECTIONS} Socket Mode connections per app"
        )


def child_arguments(args: argparse.Namespace) -> list[str]:
    """``threadline`` arguments of one of the N processes (``bots.processes`` adds the
    shared ``--host`` / ``--port``)."""
    argv = ["slack", "--log-level", str(getattr(args, "log_level", "INFO"))]
    for name in ("mode", "command", "config", "app"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    return argv + (["--scripted"] if args.scripted else [])


def _overrides(args: argparse.Namespace) -> dict[type[Section], dict[str, Any]]:
    """What the command line says, over the configuration."""
    from bots.serving import server_overrides
    from bots.slack.settings import SlackSettings

    names = ("mode", "host", "port", "command")
    return server_overrides(args, SlackSettings, {n: getattr(args, n, None) for n in names})


def run(args: argparse.Namespace) -> int:
    from bots.serving import log_to_stderr

    log_to_stderr(getattr(args, "log_level", "INFO"))
    from agent_core.settings import ConfigError
    from bots.apps import AppError
    from bots.serving import agent_factory, load_config
    from bots.slack.settings import SlackSettings

    try:
        config = load_config(args, SlackSettings, overrides=_overrides(args))
        settings, state_settings = config.get(SlackSettings), config.state
        check_processes(settings, state_settings, args.processes)
        from bots.processes import reuse_port, run_processes

        if args.processes > 1:
            return run_processes(
                child_arguments(args), count=args.processes, host=settings.host, port=settings.port
            )
        from agent_core.retention import RetentionSettings
        from bots.files import shared_files_store

        factory = agent_factory(config, "slack")
        files = shared_files_store(config)
        retention = config.get(RetentionSettings)  # the bots' own sweep
        asyncio.run(
            serve(
                settings,
                state_settings,
                factory,
                reuse_port=reuse_port(),
                files=files,
                retention=retention,
            )
        )
        return 0
    except KeyboardInterrupt:
        return 0
    except (ConfigError, AppError, ValueError) as problem:  # each names what to change
        print(f"threadline slack: {problem}", file=sys.stderr)
        return 2
