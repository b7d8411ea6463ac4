"""The ``threadline`` command: ``dev | chat | slack | teams | teams-package | config | doctor``
and, for your database, ``train | eval``.

Each subcommand lives in its own module and is imported only when chosen, so
``threadline chat`` never pays for botbuilder and ``threadline teams`` never for matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module, help); each module exposes add_arguments(parser) and run(args) -> int
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "dev": ("bots.dev.server", "local web console: talk to the agent as Slack/Teams would show it"),
    "chat": ("bots.dev.chat", "terminal chat with the demo agent"),
    "slack": ("bots.slack.app", "run the Slack bot (HTTP or Socket Mode)"),
    "teams": ("bots.teams.app", "run the Teams bot on /api/messages"),
    "teams-package": ("bots.teams.package", "write the Teams app package (manifest + icons + zip)"),
    "config": ("bots.config", "show the effective configuration and where each value came from"),
    "doctor": ("bots.doctor", "check the configuration, the model key, state and channels"),
    "train": ("bots.train", "read your database's schema (and docs/examples) into the cache"),
    "eval": ("bots.eval", "measure the agent's execution accuracy on a file of questions"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text)
        sub.set_defaults(module=module_name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            if missing.name is None or not module_name.startswith(missing.name):
                raise
            sub.set_defaults(unavailable=True)
            continue
        module.add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "unavailable", False):
        print(f"threadline {args.command}: not available in this build", file=sys.stderr)
        return 2
    module = importlib.import_module(args.module)
    try:
        return int(module.run(args))
    except ValueError as error:
        from agent_core.database.urls import DatabaseConfigError

        if not isinstance(error, DatabaseConfigError):
            raise
        print(f"threadline {args.command}: {error}", file=sys.stderr)  # e.g. a missing driver
        return 2


if __name__ == "__main__":
    sys.exit(main())
