"""``threadline usage``: what the LLM cost today and lately, and who spent it.

Reads the ledger the bots write to (``state.usage``: SQLite in the data directory, or
Redis) and prints ``agent_core.usage.report``'s report, or one JSON object (``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from typing import TYPE_CHECKING, Any

from agent_core.clock import utcnow

if TYPE_CHECKING:
    from agent_core.usage.ledger import Totals, UsageSummary
    from bots.serving import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument(
        "--days", type=int, default=7, help="the period, in UTC days up to today (default 7)"
    )
    parser.add_argument("--top", type=int, default=5, help="how many people/profiles to list")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--turn", metavar="TURN_ID", help="one turn's calls instead (kept for 7 days)"
    )


def _totals(totals: Totals) -> dict[str, Any]:
    from agent_core.usage.prices import usd

    return {
        **totals.tokens.as_dict(),
        "total_tokens": totals.tokens.total,
        "calls": totals.calls,
        "cost_usd": round(usd(totals.cost_nano), 6) if totals.calls else 0.0,
        "cost_known": totals.cost_known,
        "unpriced_tokens": totals.unpriced_tokens,
    }


def as_json(today: UsageSummary, period: UsageSummary, top: int) -> dict[str, Any]:
    return {
        "today": {"day": str(today.first), **_totals(today.total)},
        "period": {"first": str(period.first), "last": str(period.last), **_totals(period.total)},
        "top": {
            dimension: [{"key": r.key, **_totals(r.totals)} for r in period.top(dimension, top)]
            for dimension in ("person", "profile", "workspace", "model")
        },
    }


async def _read(config: Config, days: int) -> tuple[UsageSummary, UsageSummary]:
    from agent_core.state_factory import build_state

    state = build_state(config.state)
    try:
        today = utcnow().date()
        day = await state.usage.summary(today, today)
        period = await state.usage.summary(today - dt.timedelta(days=days - 1), today)
    finally:
        await state.aclose()
    return day, period


async def _turn(config: Config, turn_id: str) -> Totals:
    from agent_core.state_factory import build_state

    state = build_state(config.state)
    try:
        return await state.usage.turn(turn_id)
    finally:
        await state.aclose()


def _print_turn(config: Config, turn_id: str, as_json: bool) -> None:
    from agent_core.usage.report import totals_text

    totals = asyncio.run(_turn(config, turn_id))
    if as_json:
        print(json.dumps({"turn": turn_id, **_totals(totals)}))
    else:
        print(f"turn {turn_id}: {totals_text(totals)}")


def run(args: argparse.Namespace) -> int:
    from agent_core.errors import StateUnavailableError
    from agent_core.settings import ConfigError
    from agent_core.usage.report import report_text
    from bots.serving import load_config

    if args.days < 1 or args.top < 1:
        print("threadline usage: --days and --top must be at least 1", file=sys.stderr)
        return 2
    try:
        config = load_config(args)
        if args.turn:
            _print_turn(config, args.turn, args.json)
            return 0
        today, period = asyncio.run(_read(config, args.days))
    except (ConfigError, StateUnavailableError) as error:
        print(f"threadline usage: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_json(today, period, args.top)))
    else:
        print(report_text(today, period, limit=args.top).replace("**", ""))
    return 0
