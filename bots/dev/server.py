"""``threadline dev``: start the local console and print its URL.

Runs on embedded defaults: in-memory conversations and memory, the generated sample shop
database (in ``--data-dir``), attached files as tables (``bots.files``, in a temporary
folder removed at exit), and the demo agent (Claude when ``ANTHROPIC_API_KEY`` is set,
the scripted demo model otherwise). ``--open`` opens the page in the browser (``webbrowser``,
which honours ``$BROWSER``). The terminal gets one line per turn and every refused request
(on stderr; the URL is the first line on stdout). Only stdlib is imported at module level:
``threadline`` builds every subcommand's parser at start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import webbrowser
from pathlib import Path

DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1")
ALL_INTERFACES = "0.0.0.0"
IN_CONTAINER = "THREADLINE_CONTAINER"
"""Set (to ``1``) by the Threadline image: there ``--host 0.0.0.0`` is the container's own
interfaces, which ``docker run -p 127.0.0.1:8765:8765`` publishes on the host's loopback."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.dev.local import add_local_arguments

    parser.add_argument(
        "--host",
        default="127.0.0.1",
        choices=(*LOOPBACK, ALL_INTERFACES),
        help="loopback address to bind (default 127.0.0.1); 0.0.0.0 only inside the "
        f"Threadline image ({IN_CONTAINER}=1), published with docker run -p "
        "127.0.0.1:8765:8765",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    add_local_arguments(parser, stream_delay=0.03)
    parser.add_argument(
        "--pace",
        type=float,
        default=0.2,
        help="seconds between a channel's streamed updates (default 0.2)",
    )
    parser.add_argument(
        "--open", action="store_true", help="open the console in the web browser once it listens"
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="restart when a Python file under the current folder (or the --app file's "
        "folder) changes",
    )
    parser.add_argument(
        "--real-pace", action="store_true", help="pace streams like the real channels (1 s)"
    )
    parser.add_argument(
        "--teams-targeted",
        action="store_true",
        help="deliver Teams admin-only detail as targeted messages (preview)",
    )


async def serve(args: argparse.Namespace) -> None:
    from bots.dev.app import CONSOLE_KEY, create_app
    from bots.dev.local import local_agent, local_config
    from bots.dev.turns import ConsoleOptions
    from bots.files import shared_files_store
    from bots.server import bound_port, listen

    pace = 1.0 if args.real_pace else max(0.0, args.pace)
    options = ConsoleOptions(pace=pace, teams_targeted=args.teams_targeted)
    config = local_config(args)
    app = create_app(
        local_agent(args, "console", config), options=options, files=shared_files_store(config)
    )
    runner = await listen(app, args.host, args.port)  # with the servers' limits on slow clients
    try:
        port = bound_port(runner, args.port)
        host = f"[{args.host}]" if ":" in args.host else args.host
        if args.host == ALL_INTERFACES:  # in a container: the page is asked for by name
            host = "127.0.0.1"
        model = app[CONSOLE_KEY].agent.llm_service.model_name
        url = f"http://{host}:{port}/"
        print(f"Threadline console: {url}", flush=True)
        print(f"  model: {model}  (Ctrl-C to stop)", flush=True)
        if args.open and _first_open():
            await asyncio.to_thread(webbrowser.open, url)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


OPEN_MARKER = "THREADLINE_DEV_OPEN_MARKER"


def _first_open() -> bool:
    """False in a process ``--reload`` restarted: the browser was opened by the first one."""
    marker = os.environ.get(OPEN_MARKER)
    if not marker:
        return True
    if Path(marker).exists():
        return False
    Path(marker).touch()
    return True


def _watched(args: argparse.Namespace) -> list[Path]:
    """The folders ``--reload`` watches: the current one, and the ``--app`` file's."""
    folders = [Path.cwd()]
    app = getattr(args, "app", None) or ""
    module = app.rpartition(":")[0]
    if module.endswith(".py"):
        folders.append(Path(module).resolve().parent)
    return list(dict.fromkeys(folders))


def run_reloading(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the console in a child process and restart it when Python files change
    (``watchfiles``, as ``uvicorn --reload`` does)."""
    import shlex
    import tempfile

    from watchfiles import PythonFilter, run_process

    command = shlex.join([sys.executable, "-m", "bots.cli", "dev", *argv])
    os.environ[OPEN_MARKER] = str(Path(tempfile.mkdtemp(prefix="threadline-dev-")) / "opened")
    print("threadline dev: reloading on changes to Python files", flush=True)
    run_process(*_watched(args), target=command, target_type="command", watch_filter=PythonFilter())
    return 0


def may_listen_on(host: str) -> bool:
    """Loopback always; every interface only inside the image, whose interfaces are the
    container's own (the Host and Origin checks still admit only loopback names).

    >>> may_listen_on("127.0.0.1"), may_listen_on("192.168.1.5")
    (True, False)
    """
    if host in LOOPBACK:
        return True
    return host == ALL_INTERFACES and os.environ.get(IN_CONTAINER) == "1"


def log_to_terminal() -> None:
    """The console's own lines (a line per turn, refusals) at INFO; others' warnings."""
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    logging.getLogger("threadline.dev").setLevel(logging.INFO)


def run(args: argparse.Namespace) -> int:
    if args.reload:
        return run_reloading(args, [a for a in sys.argv[2:] if a != "--reload"])
    if not may_listen_on(args.host):
        print(
            "threadline dev: the console has no login, so it only listens on loopback "
            f"({', '.join(LOOPBACK)}); {ALL_INTERFACES} only inside the Threadline image, "
            "published on the host's loopback (docker run -p 127.0.0.1:8765:8765)",
            file=sys.stderr,
        )
        return 2
    from agent_core.settings import ConfigError
    from bots.apps import AppError

    log_to_terminal()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    except (ConfigError, AppError) as error:
        print(f"threadline dev: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the port is taken, most often
        print(
            f"threadline dev: cannot listen on {args.host}:{args.port} ({error.strerror}); "
            "try --port 0",
            file=sys.stderr,
        )
        return 1
    return 0
