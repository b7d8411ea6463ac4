"""``threadline slack``: run the Slack bot with the demo agent.

Imports only the standard library at module level (the CLI imports every subcommand to build
its parser); bolt, the agent and aiohttp load when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=["http", "socket"],
        help="transport (default: socket when SLACK_APP_TOKEN is set, else http)",
    )
    parser.add_argument("--host", help="HTTP listen address (default 0.0.0.0 or $HOST)")
    parser.add_argument("--port", type=int, help="HTTP port (default 3000 or $PORT)")
    parser.add_argument("--command", help="slash command name (default /ask or $SLACK_COMMAND)")
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="use the scripted demo model even when ANTHROPIC_API_KEY is set",
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = ("mode", "host", "port", "command")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


async def _serve(args: argparse.Namespace) -> int:
    from bots.demo import DemoSettings, build_demo_agent
    from bots.slack_bot import SlackBot
    from bots.slack_server import run_until_cancelled
    from bots.slack_settings import SlackSettings
    from bots.slack_wiring import build_client, build_user_resolver, installation_store_for

    settings = SlackSettings.from_env(**_overrides(args))
    token = settings.bot_token.get_secret_value() if settings.bot_token else None
    client = build_client(settings, None if settings.oauth_enabled else token)
    store = installation_store_for(settings)
    resolver = build_user_resolver(settings, client, store)
    demo = DemoSettings.from_env(user_resolver=resolver, data_dir=settings.data_dir)
    if args.scripted:
        demo = demo.model_copy(update={"use_scripted_model": True})
    bot = SlackBot(build_demo_agent(demo), settings, client=client, installation_store=store)
    await run_until_cancelled(bot)
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
    except ValueError as problem:  # settings errors name the missing variable
        print(f"threadline slack: {problem}", file=sys.stderr)
        return 2
