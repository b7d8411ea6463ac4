"""``threadline dev``: start the local console and print its URL.

Runs on embedded defaults: in-memory conversations and memory, the generated sample shop
database (in ``--data-dir``), and the demo agent (Claude when ``ANTHROPIC_API_KEY`` is set,
the scripted demo model otherwise). Only stdlib is imported at module level: ``threadline``
builds every subcommand's parser at start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.conversations import ConversationStore

DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        choices=LOOPBACK,
        help="loopback address to bind (default 127.0.0.1)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the sample database lives (default ~/.threadline)",
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="use the scripted demo model even when ANTHROPIC_API_KEY is set",
    )
    parser.add_argument(
        "--stream-delay",
        type=float,
        default=0.03,
        help="seconds between the scripted model's chunks (default 0.03)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.2,
        help="seconds between a channel's streamed updates (default 0.2)",
    )
    parser.add_argument(
        "--real-pace", action="store_true", help="pace streams like the real channels (1 s)"
    )
    parser.add_argument(
        "--teams-targeted",
        action="store_true",
        help="deliver Teams admin-only detail as targeted messages (preview)",
    )


def build_agent(
    args: argparse.Namespace, *, conversation_store: ConversationStore | None = None
) -> Agent:
    """The demo agent with the console's identity switcher as its user resolver.

    ``conversation_store`` is the seam for durable state; the default is in memory.
    """
    from agent_core.conversations import MemoryConversationStore
    from bots.demo.agent import DemoSettings, build_demo_agent
    from bots.dev.identity import ConsoleUserResolver

    overrides: dict[str, Any] = {
        "user_resolver": ConsoleUserResolver(),
        "conversation_store": conversation_store or MemoryConversationStore(),
        "stream_delay": max(0.0, args.stream_delay),
    }
    if args.data_dir is not None:
        overrides["data_dir"] = args.data_dir
    if args.scripted:
        overrides["use_scripted_model"] = True
    return build_demo_agent(DemoSettings.from_env(**overrides))


async def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    from bots.dev.app import CONSOLE_KEY, create_app
    from bots.dev.turns import ConsoleOptions

    pace = 1.0 if args.real_pace else max(0.0, args.pace)
    options = ConsoleOptions(pace=pace, teams_targeted=args.teams_targeted)
    app = create_app(build_agent(args), options=options)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, args.host, args.port).start()
        port = runner.addresses[0][1] if runner.addresses else args.port
        host = f"[{args.host}]" if ":" in args.host else args.host
        model = app[CONSOLE_KEY].agent.llm_service.model_name
        print(f"Threadline console: http://{host}:{port}/", flush=True)
        print(f"  model: {model}  (Ctrl-C to stop)", flush=True)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def run(args: argparse.Namespace) -> int:
    if args.host not in LOOPBACK:
        print(
            "threadline dev: the console has no login, so it only listens on loopback "
            f"({', '.join(LOOPBACK)})",
            file=sys.stderr,
        )
        return 2
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    except OSError as error:  # the port is taken, most often
        print(
            f"threadline dev: cannot listen on {args.host}:{args.port} ({error.strerror}); "
            "try --port 0",
            file=sys.stderr,
        )
        return 1
    return 0
