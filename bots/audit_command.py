"""``threadline audit``: hand the audit trail over, and prove nobody edited it.

- ``threadline audit export --since 2026-11-01 --until 2026-12-01 [--workspace slack:T1]
  [--format jsonl|csv] [--out FILE]``: the records in that span, each with who its
  pseudonym stands for (from the directory; empty once the person was erased);
- ``threadline audit verify``: walks the whole chain; exit 0 when intact, 1 naming the
  first record that does not follow (edited, removed or inserted).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import io
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from agent_core.audit_chain import AuditRecord, Verdict
    from bots.serving import Config

COLUMNS = (
    "seq",
    "at",
    "time",
    "kind",
    "person",
    "person_id",
    "person_name",
    "person_email",
    "workspace",
    "profile",
    "conversation",
    "details",
    "details_hash",
    "prev",
    "hash",
)


def instant(text: str) -> float:
    """``2026-11-01`` (midnight UTC) or an ISO date and time (UTC unless it says).

    >>> instant("1970-01-02")
    86400.0
    """
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="the records of a span, as JSON Lines or CSV")
    export.add_argument("--since", type=instant, help="from this date or time (UTC), included")
    export.add_argument("--until", type=instant, help="up to this date or time, excluded")
    export.add_argument("--workspace", help="only this workspace (slack:T0123, teams:TENANT)")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--out", help="write to this file instead of standard output")
    actions.add_parser("verify", help="check the hash chain; exit 1 naming the first bad record")


def rows(records: list[AuditRecord], people: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Each record as the export writes it, the directory's identity beside the pseudonym."""
    found = []
    for record in records:
        who = people.get(record.person or "", {})
        found.append(
            record.model_dump()
            | {
                "time": dt.datetime.fromtimestamp(record.at, dt.UTC).isoformat(),
                "person_id": who.get("id", ""),
                "person_name": who.get("name", ""),
                "person_email": who.get("email", ""),
            }
        )
    return found


def write(found: list[dict[str, Any]], out: TextIO, form: str) -> None:
    if form == "jsonl":
        for row in found:
            out.write(json.dumps({key: row[key] for key in COLUMNS}, sort_keys=True) + "\n")
        return
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in found:
        details = row["details"]
        writer.writerow(row | {"details": "" if details is None else json.dumps(details)})


async def export(config: Config, args: argparse.Namespace) -> str:
    from agent_core.state_factory import build_state

    state = build_state(config.state)
    try:
        records = await state.audit.records(since=args.since, until=args.until)
        people = await state.audit.people()
    finally:
        await state.aclose()
    if args.workspace:
        records = [r for r in records if r.workspace == args.workspace]
    buffer = io.StringIO()
    write(rows(records, people), buffer, args.format)
    return buffer.getvalue()


async def verify(config: Config) -> Verdict:
    from agent_core.state_factory import build_state

    state = build_state(config.state)
    try:
        verdict: Verdict = await state.audit.verify()
    finally:
        await state.aclose()
    return verdict


def run(args: argparse.Namespace) -> int:
    from agent_core.errors import StateUnavailableError
    from agent_core.settings import ConfigError
    from bots.serving import load_config

    try:
        config = load_config(args)
        if args.action == "verify":
            verdict = asyncio.run(verify(config))
            print(verdict.sentence())
            return 0 if verdict.ok else 1
        text = asyncio.run(export(config, args))
    except (ConfigError, StateUnavailableError) as error:
        print(f"threadline audit: {error}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="") as file:
            file.write(text)
    else:
        sys.stdout.write(text)
    return 0
