"""``threadline slack``: run the Slack bot with the demo agent.

State (``agent_core.state``): conversations, memory, turns, installations and caches live
in SQLite files in ``THREADLINE_DATA_DIR`` by default, in Redis when ``REDIS_URL`` is set
(required for ``--processes N``), in memory with ``--ephemeral``.

Imports only the standard library at module level (the CLI imports every subcommand to build
its parser); bolt, the agent and aiohttp load when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.state import State, StateSettings
    from agent_core.users import UserResolver
    from bots.slack.settings import SlackSettings

    AgentFactory = Callable[[State, UserResolver], Agent]

log = logging.getLogger(__name__)

MAX_SOCKET_CONNECTIONS = 10
"""Slack allows at most 10 simultaneous Socket Mode connections per app."""


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


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = ("mode", "host", "port", "command")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def demo_agent_factory(settings: SlackSettings, *, scripted: bool) -> AgentFactory:
    """The demo agent on the bot's state (conversations and memory) and user resolver."""

    def build(state: State, resolver: UserResolver) -> Agent:
        from bots.demo import DemoSettings, build_demo_agent

        demo = DemoSettings.from_env(
            user_resolver=resolver,
            data_dir=settings.data_dir,
            conversation_store=state.conversations,
            agent_memory=state.memory,
        )
        if scripted:
            demo = demo.model_copy(update={"use_scripted_model": True})
        return build_demo_agent(demo)

    return build


async def serve(
    settings: SlackSettings,
    state_settings: StateSettings,
    build_agent: AgentFactory,
    *,
    reuse_port: bool = False,
) -> None:
    """Run one bot process until cancelled: state, identity, agent, quota, transport."""
    from agent_core.state import build_state
    from bots.slack.bot import SlackBot, default_clients
    from bots.slack.clients import build_user_resolver
    from bots.slack.server import run_until_cancelled

    state = build_state(state_settings)
    log.info("threadline slack: state in %s", state_settings.describe())
    try:
        clients = default_clients(settings, state)
        agent = build_agent(state, build_user_resolver(settings, clients, state.cache))
        if settings.rate_limit is not None:
            limit, window = settings.rate_limit
            hook = state.rate_limit_hook(limit=limit, window=window, exempt_groups=["admin"])
            agent.lifecycle_hooks.append(hook)
        bot = SlackBot(agent, settings, state=state, clients=clients)
        await run_until_cancelled(bot, reuse_port=reuse_port)
    finally:
        await state.aclose()


def check_processes(settings: SlackSettings, state: StateSettings, processes: int) -> None:
    """Refuse process counts that cannot work, naming what to change."""
    if processes < 1:
        raise ValueError("--processes must be at least 1")
    if processes == 1:
        return
    if state.backend != "redis":
        raise ValueError(
            f"--processes {processes} needs REDIS_URL: the processes share conversations, "
            "turns and caches through Redis (SQLite and --ephemeral state belong to one process)"
        )
    if settings.mode == "socket" and processes > MAX_SOCKET_CONNECTIONS:
        raise ValueError(
            f"Slack allows at most {MAX_SOCKET_CONNECTIONS} Socket Mode connections per app"
        )


def child_arguments(args: argparse.Namespace) -> list[str]:
    """``threadline`` arguments of one of the N processes (``bots.processes`` adds the
    shared ``--host`` / ``--port``)."""
    argv = ["slack"]
    for name in ("mode", "command"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    return argv + (["--scripted"] if args.scripted else [])


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from agent_core.state import StateSettings
    from bots.slack.settings import SlackSettings

    try:
        settings = SlackSettings.from_env(**_overrides(args))
        overrides: dict[str, Any] = {"data_dir": settings.data_dir}
        if args.ephemeral:
            overrides["ephemeral"] = True
        state_settings = StateSettings.from_env(None, **overrides)
        check_processes(settings, state_settings, args.processes)
        from bots.processes import reuse_port, run_processes

        if args.processes > 1:
            return run_processes(
                child_arguments(args), count=args.processes, host=settings.host, port=settings.port
            )
        factory = demo_agent_factory(settings, scripted=args.scripted)
        asyncio.run(serve(settings, state_settings, factory, reuse_port=reuse_port()))
        return 0
    except KeyboardInterrupt:
        return 0
    except ValueError as problem:  # settings errors name the missing variable
        print(f"threadline slack: {problem}", file=sys.stderr)
        return 2
