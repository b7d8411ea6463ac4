"""``threadline train``: read your database's schema (and a folder of documentation and
question -> SQL examples) into the schema cache every command then starts from.

Runs the start-up check first (reachable? can the user write?), then introspects tables,
columns, types, keys and comments, writes the cache under the data directory, and prints
what the agent will retrieve from: ``N tables (T tokens in all), notes, examples``. The
agent also refreshes the cache by itself (at start, then hourly); run this after a schema
change or when the training folder changed. ``--profile NAME`` trains a profile's own
database (``[[profiles]] database``): each database has its schema cache and training.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.database.settings import DatabaseConfig

# SQLAlchemy and sqlglot load when the command runs, not whenever `threadline` parses its
# arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument(
        "--database-url", default=None, help="a SQLAlchemy URL (default: THREADLINE_DATABASE_URL)"
    )
    parser.add_argument(
        "--training-dir",
        type=Path,
        default=None,
        help="documentation (*.md, *.txt) and examples (*.sql) about the data "
        "(default: THREADLINE_TRAINING_DIR)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the cache goes (default: THREADLINE_DATA_DIR)",
    )
    parser.add_argument(
        "--profile", default=None, help="train this [[profiles]] entry's own database"
    )


def _settings(args: argparse.Namespace) -> tuple[DatabaseConfig, Path]:
    """The database (``--profile``'s, else ``[database]``) and the data folder: the options
    over the configuration."""
    from agent_core.database.settings import DatabaseSettings
    from agent_core.state_factory import StateSettings
    from bots.serving import database_of, load_config

    database = {
        k: v
        for k, v in (("url", args.database_url), ("training_dir", args.training_dir))
        if v is not None
    }
    state = {"data_dir": args.data_dir} if args.data_dir is not None else {}
    config = load_config(args, overrides={DatabaseSettings: database, StateSettings: state})
    profile = getattr(args, "profile", None)
    name, chosen = database_of(config, profile)
    if profile and name != profile:
        raise SystemExit(f"threadline train: profile {profile!r} has no database of its own")
    return chosen.model_copy(update=database) if profile else chosen, config.state.data_dir


async def train(database: DatabaseConfig, data_dir: Path) -> dict[str, Any]:
    """Check, introspect and cache; the summary (``ok`` False when unreachable)."""
    from agent_core.database.checks import check_database
    from agent_core.database.runner import SqlAlchemyRunner
    from agent_core.database.schema_source import SchemaSource, cache_path_for
    from agent_core.tools.sql import SqlError

    assert database.url is not None
    training_dir = database.training_dir
    runner = SqlAlchemyRunner(
        database.url,
        functions=database.allowed_functions,
        allow_privileged=database.allow_privileged_user,
    )
    report = await check_database(runner)
    for line in report.lines():
        print(line)
    summary: dict[str, Any] = {"database": runner.masked_url, "ok": report.reachable}
    if not report.reachable:
        return summary
    source = SchemaSource(
        runner, cache_path=cache_path_for(data_dir, runner), training_dir=training_dir
    )
    try:
        index = await source.refresh()
    except SqlError as error:
        print(f"introspection failed: {error}")
        return {**summary, "ok": False}
    catalog = index.catalog
    summary |= {
        "tables": len(catalog.tables),
        "columns": sum(len(table.columns) for table in catalog.tables),
        "schema_tokens": catalog.tokens,
        "notes": len(index.training.notes),
        "examples": len(index.training.examples),
        "cache": str(source.cache_path),
        "write_access": report.write_access.status if report.write_access else "unknown",
    }
    print(
        f"{summary['tables']} tables, {summary['columns']} columns ({catalog.tokens:,} "
        f"tokens in all); {summary['notes']} notes and {summary['examples']} examples; "
        f"cached in {source.cache_path}"
    )
    return summary


def run(args: argparse.Namespace) -> int:
    from agent_core.database.urls import DatabaseConfigError

    database, data_dir = _settings(args)
    if database.url is None:
        print(
            "threadline train: set THREADLINE_DATABASE_URL or pass --database-url", file=sys.stderr
        )
        return 2
    try:
        summary = asyncio.run(train(database, data_dir))
    except DatabaseConfigError as error:
        print(f"threadline train: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="threadline train")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
