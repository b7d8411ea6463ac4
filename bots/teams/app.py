"""``threadline teams``: run the Teams bot (``/api/messages``, ``/healthz``, ``/metrics``).

``run`` goes settings -> state -> bot (``bots.teams.bot``) -> transport: ``build_web_app(bot)`` is
the aiohttp application, thin on purpose (``bots.teams.ingress`` reads the request, hands it
to the bot and answers with what it says, never with a 5xx). Prometheus ``/metrics`` and
``/healthz`` (red while the state backend is down) sit beside ``/api/messages``.

Configuration comes from the environment; see ``bots.teams.settings`` for every variable.
The minimum for a real tenant is ``MicrosoftAppId`` + ``MicrosoftAppPassword`` (multi-tenant),
or add ``MicrosoftAppType=SingleTenant`` and ``MicrosoftAppTenantId``; with no app id the bot
runs with authentication off, for local testing only. Then upload the package from
``threadline teams-package`` to Teams.

State (``agent_core.state``): SQLite files in ``THREADLINE_DATA_DIR`` by default (one
process), Redis when ``REDIS_URL`` is set (any number of processes: ``--processes N`` on one
port, or N hosts behind a load balancer), memory with ``--ephemeral``. Conversations, agent
memory, accepted turns, delivery ids, identity caches, conversation references and per-user
quotas all live there. ``THREADLINE_CLAIM_AFTER`` (seconds, default 30) is how long a
turn whose process died waits before another process takes it over.

This module imports only the standard library at the top: the ``threadline`` command imports
every subcommand to build its help, and botbuilder is loaded only when this one runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from agent_core.agent import Agent
    from agent_core.retention import RetentionSettings
    from agent_core.settings import Section
    from agent_core.state_factory import State, StateSettings
    from agent_core.users import UserResolver
    from bots.files import SharedFiles
    from bots.profiles import ProfileRouter
    from bots.serving import Config
    from bots.teams.bot import TeamsBot
    from bots.teams.settings import TeamsSettings

    AgentFactory = Callable[[State, UserResolver], Agent | ProfileRouter]

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments, add_log_level

    add_config_arguments(parser)
    parser.add_argument(
        "--host",
        help="interface to listen on (default: $HOST or 0.0.0.0; 127.0.0.1 while "
        "authentication is off, unless --allow-unauthenticated-remote)",
    )
    parser.add_argument("--port", type=int, help="port to listen on (default: $PORT or 3978)")
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="answer with the scripted demo model even if ANTHROPIC_API_KEY is set",
    )
    parser.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep conversations and caches in memory only (default: $THREADLINE_DATA_DIR "
        "SQLite files, or Redis when $REDIS_URL is set)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=int(os.environ.get("THREADLINE_PROCESSES") or 1),
        help="run N processes on the same port (Linux SO_REUSEPORT; needs REDIS_URL); "
        "default $THREADLINE_PROCESSES or 1",
    )
    add_log_level(parser)
    parser.add_argument(
        "--allow-unauthenticated-remote",
        action="store_true",
        default=None,
        help="with authentication off (no MicrosoftAppId), listen on --host anyway: anyone "
        "who reaches the bot can then claim to be anyone (default: 127.0.0.1 only)",
    )


def run(args: argparse.Namespace) -> int:
    from agent_core.settings import ConfigError
    from bots.apps import AppError
    from bots.serving import load_config
    from bots.teams.settings import TeamsSettings

    try:
        config = load_config(args, TeamsSettings, overrides=_overrides(args))
        from bots.serving import log_to_stderr

        log_to_stderr(args.log_level)
        from bots.processes import check_processes

        check_processes(args.processes, config.state)
        if args.processes > 1:
            return _run_many(args, config)
        return _serve(config)
    except KeyboardInterrupt:
        return 0
    except (ConfigError, AppError, ValueError) as error:  # each names what to change
        print(f"threadline teams: {error}", file=sys.stderr)
        return 2


def _overrides(args: argparse.Namespace) -> dict[type[Section], dict[str, Any]]:
    """What the command line says, over the configuration."""
    from bots.serving import server_overrides
    from bots.teams.settings import TeamsSettings

    options = {
        "host": args.host,
        "port": args.port,
        "allow_unauthenticated_remote": args.allow_unauthenticated_remote,
    }
    return server_overrides(args, TeamsSettings, options)


def _run_many(args: argparse.Namespace, config: Config) -> int:
    """``--processes N``: N copies of this command sharing the port and the Redis state."""
    from bots.processes import run_processes
    from bots.teams.settings import TeamsSettings

    settings = config.get(TeamsSettings)
    argv = ["teams", "--log-level", str(args.log_level)]
    for name in ("config", "app"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    if args.scripted:
        argv.append("--scripted")
    if args.allow_unauthenticated_remote:
        argv.append("--allow-unauthenticated-remote")
    from bots.server import listen_host

    host = listen_host(
        settings.host,
        authenticated=settings.auth_enabled,
        allow_remote=settings.allow_unauthenticated_remote,
        what="threadline teams",
    )
    return run_processes(argv, count=args.processes, host=host, port=settings.port)


def _serve(config: Config) -> int:
    from agent_core.retention import RetentionSettings
    from bots.files import shared_files_store
    from bots.processes import reuse_port
    from bots.serving import agent_factory
    from bots.teams.settings import TeamsSettings

    settings = config.get(TeamsSettings)
    factory = agent_factory(config, "teams")
    files = shared_files_store(config)
    retention = config.get(RetentionSettings)  # the bots' own sweep
    asyncio.run(
        serve(
            settings,
            config.state,
            factory,
            reuse_port=reuse_port(),
            files=files,
            retention=retention,
        )
    )
    return 0


async def serve(
    settings: TeamsSettings,
    state_settings: StateSettings,
    build_agent: AgentFactory,
    *,
    reuse_port: bool = False,
    files: SharedFiles | None = None,
    retention: RetentionSettings | None = None,
) -> None:
    """Run one bot process until cancelled or SIGTERM: state, identity, agent, quota,
    transport (``bots.server.serve``: the Slack bot's lifecycle), and the retention sweep
    (``agent_core.retention.sweeping``)."""
    from agent_core.retention import sweeping
    from agent_core.state_factory import build_state
    from bots.server import listen_host
    from bots.server import serve as serve_until_terminated
    from bots.serving import add_quota
    from bots.teams.bot import TeamsBot, user_resolver
    from bots.teams.connector import ConnectorPool
    from bots.usage_metrics import watch_usage

    state = build_state(state_settings)
    log.info("threadline teams: state in %s", state_settings.describe())
    try:
        pool = ConnectorPool()
        agent = build_agent(state, user_resolver(settings, pool, state.cache))
        add_quota(agent, state, settings.rate_limit)
        bot = TeamsBot(agent, settings, state=state, pool=pool, files=files)
        watch_usage(bot.metrics.registry, state.usage)  # LLM tokens and cost on /metrics
        host = listen_host(
            settings.host,
            authenticated=settings.auth_enabled,
            allow_remote=settings.allow_unauthenticated_remote,
            what="threadline teams",
        )
        async with sweeping(state, retention):  # [retention]: one process per period sweeps
            await serve_until_terminated(
                bot,
                build_web_app(bot),
                host=host,
                port=settings.port,
                logger=log,
                reuse_port=reuse_port,
            )
    finally:
        await state.aclose()


def build_web_app(bot: TeamsBot) -> web.Application:
    """The aiohttp application serving ``bot``: ``/api/messages``, ``/healthz``, ``/metrics``
    (``bots.server.serve`` opens and closes the bot around it)."""
    from aiohttp import web

    from bots.mcp import add_callback
    from bots.server import health_route, metrics_route
    from bots.teams.ingress import handle_messages

    async def messages(request: web.Request) -> web.StreamResponse:
        return await handle_messages(bot, request)  # every answer < 500 (bots.teams.ingress)

    app = web.Application(client_max_size=1024 * 1024)
    app.router.add_post("/api/messages", messages)
    app.router.add_get("/healthz", health_route(bot))
    app.router.add_get("/metrics", metrics_route(bot))
    add_callback(app, bot.agent, bot.ask_again)  # people's MCP sign-ins come back here
    return app
