"""``threadline teams``: run the Teams bot (``/api/messages``, ``/healthz``, ``/metrics``).

``run`` goes settings -> state -> bot (``bots.teams.bot``) -> transport: ``web_app(bot)`` is
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
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from agent_core.settings import Section
    from agent_core.state import State
    from bots.agents import ServedAgent
    from bots.files import SharedFiles
    from bots.serving import Config
    from bots.teams.bot import ThreadlineTeamsBot
    from bots.teams.connector import ConnectorPool
    from bots.teams.settings import TeamsSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument("--host", help="interface to listen on (default: $HOST or 0.0.0.0)")
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
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")


def run(args: argparse.Namespace) -> int:
    from agent_core.settings import ConfigError
    from bots.apps import AppError
    from bots.serving import load_config
    from bots.teams.settings import TeamsSettings

    try:
        config = load_config(args, TeamsSettings, overrides=_overrides(args))
        logging.basicConfig(
            level=getattr(logging, str(args.log_level).upper(), logging.INFO),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        if args.processes > 1:
            return _run_many(args, config)
        return _serve(config)
    except (ConfigError, AppError) as error:
        print(f"threadline teams: {error}", file=sys.stderr)
        return 2


def _overrides(args: argparse.Namespace) -> dict[type[Section], dict[str, Any]]:
    """What the command line says, over the configuration."""
    from bots.serving import server_overrides
    from bots.teams.settings import TeamsSettings

    return server_overrides(args, TeamsSettings, {"host": args.host, "port": args.port})


def _run_many(args: argparse.Namespace, config: Config) -> int:
    """``--processes N``: N copies of this command sharing the port and the Redis state."""
    from bots.processes import run_processes
    from bots.teams.settings import TeamsSettings

    settings, state_settings = config.get(TeamsSettings), config.state
    if state_settings.backend != "redis":
        print(
            "threadline teams: --processes needs shared state: set REDIS_URL "
            f"(state is {state_settings.describe()})",
            file=sys.stderr,
        )
        return 2
    argv = ["teams", "--log-level", str(args.log_level)]
    for name in ("config", "app"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    if args.scripted:
        argv.append("--scripted")
    return run_processes(argv, count=args.processes, host=settings.host, port=settings.port)


def _serve(config: Config) -> int:
    from aiohttp import web

    from agent_core.state import build_state
    from bots.processes import reuse_port
    from bots.serving import add_quota, agent_factory
    from bots.teams.bot import user_resolver
    from bots.teams.connector import ConnectorPool
    from bots.teams.settings import TeamsSettings
    from bots.usage_metrics import watch_usage

    settings = config.get(TeamsSettings)
    state = build_state(config.state)
    logging.getLogger("threadline.teams").info("state: %s", config.state.describe())
    pool = ConnectorPool()
    agent = agent_factory(config, "teams")(state, user_resolver(settings, pool, state.cache))
    add_quota(agent, state, settings.rate_limit)
    from bots.files import shared_files_store

    files = shared_files_store(config)
    bot = bot_on_state(agent, settings, state, pool=pool, shared_files=files)
    watch_usage(bot.metrics.registry, state.usage)  # LLM tokens and cost on /metrics
    app = web_app(bot)

    async def close_state(app: web.Application) -> None:
        await state.aclose()

    app.on_cleanup.append(close_state)
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        access_log=None,
        reuse_port=reuse_port() or None,
    )
    return 0


def bot_on_state(
    agent: ServedAgent,
    settings: TeamsSettings,
    state: State,
    *,
    pool: ConnectorPool | None = None,
    shared_files: SharedFiles | None = None,
) -> ThreadlineTeamsBot:
    """The Teams bot with every shared thing in ``state`` (so N processes share them)."""
    from adapters.teams.files import FileOffers
    from bots.teams.bot import ThreadlineTeamsBot

    return ThreadlineTeamsBot(
        agent,
        settings,
        pool=pool,
        deliveries=state.cache,
        files=FileOffers(state.cache),
        shared_files=shared_files,
        health=state.health,
        turn_queue=state.turns,
        records=state.records,
        concurrency=settings.concurrency,
    )


def web_app(bot: ThreadlineTeamsBot) -> web.Application:
    """The aiohttp application serving ``bot``: ``/api/messages``, ``/healthz``, ``/metrics``;
    the bot opens with the application and closes with it."""
    from aiohttp import web

    from bots.teams.ingress import handle_messages

    async def messages(request: web.Request) -> web.StreamResponse:
        return await handle_messages(bot, request)  # every answer < 500 (bots.teams.ingress)

    async def healthz(request: web.Request) -> web.Response:
        """200 when turns can be accepted; 503 while the state backend (Redis) is down."""
        state = await bot.health()
        ok = state is None or state.ok
        body: dict[str, Any] = {
            "status": "ok" if ok else "unavailable",
            "auth": bot.settings.auth_enabled,
            "pid": os.getpid(),
        }
        if state is not None:
            body["state"] = {"backend": state.backend, "detail": state.detail}
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=bot.metrics.render(), content_type="text/plain", charset="utf-8")

    async def opened(app: web.Application) -> None:
        await bot.open()

    async def closed(app: web.Application) -> None:
        await bot.close()

    app = web.Application()
    app.router.add_post("/api/messages", messages)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    app.on_startup.append(opened)
    app.on_cleanup.append(closed)
    return app
