"""``threadline teams``: run the Teams bot (``/api/messages``, ``/healthz``, ``/metrics``).

Configuration comes from the environment; see ``bots.teams_settings`` for every variable.
The minimum for a real tenant is ``MicrosoftAppId`` + ``MicrosoftAppPassword`` (multi-tenant),
or add ``MicrosoftAppType=SingleTenant`` and ``MicrosoftAppTenantId``; with no app id the bot
runs with authentication off, for local testing only. Then upload the package from
``threadline teams-package`` to Teams.

This module imports only the standard library at the top: the ``threadline`` command imports
every subcommand to build its help, and botbuilder is loaded only when this one runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.state import State
    from bots.teams_host import TeamsHost


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
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")


def run(args: argparse.Namespace) -> int:
    from aiohttp import web

    from adapters.teams.files import FileOffers
    from agent_core.state import StateSettings, build_state
    from bots.teams_host import TeamsHost
    from bots.teams_settings import SettingsError, TeamsSettings

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = TeamsSettings.from_env(**overrides)
    except SettingsError as error:
        print(f"threadline teams: configuration incomplete: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    state = build_state(StateSettings.from_env(ephemeral=bool(args.ephemeral)))
    logging.getLogger("threadline.teams").info("state: %s", state.backend)
    host = TeamsHost(
        settings,
        deliveries=state.cache,
        identity_cache=state.cache,
        files=FileOffers(state.cache),
        health=state.health,
    )
    app = host.app(_build_agent(host, state, scripted=bool(args.scripted)))

    async def close_state(app: web.Application) -> None:
        await state.aclose()

    app.on_cleanup.append(close_state)
    web.run_app(app, host=settings.host, port=settings.port, access_log=None)
    return 0


def _build_agent(host: TeamsHost, state: State, *, scripted: bool) -> Agent:
    """The demo agent, answering as the Teams user resolver says who is asking, with its
    conversations and memory in ``state``."""
    from bots.demo import DemoSettings, build_demo_agent

    settings = DemoSettings.from_env(
        user_resolver=host.user_resolver(),
        conversation_store=state.conversations,
        agent_memory=state.memory,
    )
    if scripted:
        settings.use_scripted_model = True
    return build_demo_agent(settings)
