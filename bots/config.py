"""``threadline config``: the effective configuration, and where each value came from.

Every setting of ``threadline.toml`` + ``.env`` + the environment (environment wins), with
the file and line, the ``.env`` entry, the variable or "default" it came from; secrets and
passwords in URLs are masked. A channel nobody configured is listed as such; a channel whose
settings are wrong lists every problem, as the command serving it would refuse to start.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.settings import Section
    from bots.serving import Config

Row = tuple[str, str, str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (one object per setting)")


def _channel_rows(args: argparse.Namespace, kind: type[Section]) -> list[Row]:
    from pathlib import Path

    from agent_core.settings import DOTENV_FILE, ConfigError, load_sections, mentioned
    from bots.serving import SHARED, channel_sections, config_file

    file = config_file(args)
    if not mentioned(kind, file=file, dotenv=Path(DOTENV_FILE)):
        return [(kind.table, "(not configured)", "")]
    known = (*SHARED, *channel_sections())
    try:
        loaded = load_sections([kind], file=file, dotenv=Path(DOTENV_FILE), known=known)
    except ConfigError as error:
        return [(kind.table, "(invalid)", str(problem)) for problem in error.problems]
    return loaded.rows()


def rows(args: argparse.Namespace) -> list[Row]:
    """``(setting, value, origin)`` of every setting (each profile's own database too);
    raises ``ConfigError``."""
    from bots.serving import channel_sections, load_config

    config = load_config(args)
    found = config.loaded.rows() + _profile_databases(config)
    for kind in channel_sections():
        found += _channel_rows(args, kind)
    return found


def _profile_databases(config: Config) -> list[Row]:
    where = config.loaded.file.name if config.loaded.file else "threadline.toml"
    found = []
    for profile in config.general.profiles:
        if profile.database is None:
            continue
        for name in sorted(profile.database.model_fields_set):
            key = f"profiles.{profile.name}.database.{name}"
            value = profile.database.shown(name)
            found.append((key, value, f"{where} [[profiles]] {profile.name}"))
    return found


def run(args: argparse.Namespace) -> int:
    from agent_core.settings import ConfigError

    try:
        found = rows(args)
    except ConfigError as error:
        print(f"threadline config: {error}", file=sys.stderr)
        return 2
    if args.json:
        for setting, value, origin in found:
            print(json.dumps({"setting": setting, "value": value, "from": origin}))
        return 0
    width = max(len(setting) for setting, _, _ in found)
    value_width = min(48, max(len(value) for _, value, _ in found))
    for setting, value, origin in found:
        print(f"{setting:<{width}}  {value:<{value_width}}  {origin}".rstrip())
    return 0
