"""``threadline teams``: run the Teams bot (``/api/messages``, ``/healthz``, ``/metrics``).

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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.state import State, StateSettings
    from bots.teams.bot import TeamsHost
    from bots.teams.settings import TeamsSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    from bots.teams.settings import SettingsError, TeamsSettings

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = TeamsSettings.from_env(**overrides)
        state_settings = _state_settings(args)
    except (SettingsError, ValueError) as error:
        print(f"threadline teams: configuration incomplete: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.processes > 1:
        return _run_many(args, settings, state_settings)
    return _serve(args, settings, state_settings)


def _state_settings(args: argparse.Namespace) -> StateSettings:
    from agent_core.state import StateSettings

    return StateSettings.from_env(ephemeral=bool(args.ephemeral))


def _run_many(args: argparse.Namespace, settings: TeamsSettings,
              state_settings: StateSettings) -> int:
    """``--processes N``: N copies of this command sharing the port and the Redis state."""
    from bots.processes import run_processes

    if state_settings.backend != "redis":
        print("threadline teams: --processes needs shared state: set REDIS_URL "
              f"(state is {state_settings.describe()})", file=sys.stderr)
        return 2
    argv = ["teams", "--log-level", str(args.log_level)]
    if args.scripted:
        argv.append("--scripted")
    return run_processes(argv, count=args.processes, host=settings.host, port=settings.port)


def _serve(args: argparse.Namespace, settings: TeamsSettings,
           state_settings: StateSettings) -> int:
    from aiohttp import web

    from agent_core.state import build_state
    from bots.processes import reuse_port

    state = build_state(state_settings)
    logging.getLogger("threadline.teams").info("state: %s", state_settings.describe())
    host = host_on_state(settings, state)
    app = host.app(build_agent(host, state, settings, scripted=bool(args.scripted)))

    async def close_state(app: web.Application) -> None:
        await state.aclose()

    app.on_cleanup.append(close_state)
    web.run_app(app, host=settings.host, port=settings.port, access_log=None,
                reuse_port=reuse_port() or None)
    return 0


def host_on_state(settings: TeamsSettings, state: State) -> TeamsHost:
    """The Teams host with every shared thing in ``state`` (so N processes share them)."""
    from adapters.teams.files import FileOffers
    from bots.teams.bot import TeamsHost

    return TeamsHost(
        settings,
        deliveries=state.cache,
        identity_cache=state.cache,
        files=FileOffers(state.cache),
        health=state.health,
        turn_queue=state.turns,
        records=state.records,
        concurrency=settings.concurrency,
    )


def build_agent(host: TeamsHost, state: State, settings: TeamsSettings, *,
                scripted: bool) -> Agent:
    """The demo agent, answering as the Teams user resolver says who is asking, with its
    conversations and memory in ``state`` and the per-user quota of ``settings``.

    ``THREADLINE_DEMO_STREAM_DELAY`` (seconds between the scripted model's chunks) makes the
    scripted demo visibly stream."""
    from bots.demo import DemoSettings, build_demo_agent

    demo = DemoSettings.from_env(
        user_resolver=host.user_resolver(),
        conversation_store=state.conversations,
        agent_memory=state.memory,
    )
    if scripted:
        demo.use_scripted_model = True
    delay = os.environ.get("THREADLINE_DEMO_STREAM_DELAY")
    if delay:
        demo.stream_delay = float(delay)
    agent = build_demo_agent(demo)
    if settings.rate_limit:  # admins are not counted (as in the Slack bot)
        agent.lifecycle_hooks.append(state.rate_limit_hook(
            limit=settings.rate_limit, window=settings.rate_window, exempt_groups=["admin"]
        ))
    return agent
