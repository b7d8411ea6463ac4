"""``threadline retention``: remove what is older than ``[retention]`` says, now.

Run it daily (cron, a Kubernetes CronJob): each step deletes what is older than its
cut-off, so two runs that overlap, or several processes, do no harm
(``agent_core.retention``). ``--json`` prints what went as one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.retention import Swept
    from bots.serving import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


async def swept(config: Config) -> Swept:
    from agent_core.retention import RetentionSettings, sweep
    from agent_core.state_factory import build_state

    state = build_state(config.state)
    try:
        return await sweep(state, config.get(RetentionSettings))
    finally:
        await state.aclose()


def run(args: argparse.Namespace) -> int:
    from agent_core.errors import StateUnavailableError
    from agent_core.settings import ConfigError
    from bots.serving import load_config

    try:
        done = asyncio.run(swept(load_config(args)))
    except (ConfigError, StateUnavailableError) as error:
        print(f"threadline retention: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"removed": done.removed, "cutoffs": done.cutoffs}, sort_keys=True))
    else:
        for kind, count in done.removed.items():
            print(f"{kind:<14} {count} removed")
    return 0
