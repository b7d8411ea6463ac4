"""``threadline schedules``: every schedule in the configured state, for operators.

Reads the state the bots share (``REDIS_URL``, else the SQLite files in the data directory)
and prints one line per schedule: id, workspace, owner, status, when it runs, its next run
(UTC) and what it asks. ``--pause-all WORKSPACE`` / ``--resume-all WORKSPACE`` do what an
admin's ``/schedules pause-all`` does, from the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.schedules.model import Schedule
    from agent_core.schedules.store import ScheduleStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument("--workspace", help="only this workspace's (slack:T123, teams:<tenant>)")
    parser.add_argument("--owner", help="only this person's (slack:T123:U456, teams:...)")
    parser.add_argument("--json", action="store_true", help="print JSON (one object per line)")
    pausing = parser.add_mutually_exclusive_group()
    pausing.add_argument("--pause-all", metavar="WORKSPACE", help="skip every run there")
    pausing.add_argument("--resume-all", metavar="WORKSPACE", help="run them again")


def row(schedule: Schedule) -> dict[str, Any]:
    """One schedule as the command prints it.

    >>> from agent_core.schedules.model import Place, Schedule
    >>> from agent_core.schedules.recurrence import Recurrence
    >>> s = Schedule(id="5e1f0c2a", workspace="slack:T1", owner="slack:T1:U1",
    ...              place=Place(thread_key="k"), recurrence=Recurrence(frequency="daily",
    ...              hour=9), question="revenue", created_at=0.0, next_due=32400.0)
    >>> row(s)["next_run"], row(s)["schedule"]
    ('1970-01-01 09:00 UTC', 'every day 9:00 (UTC)')
    """
    last = schedule.last_run
    return {
        "id": schedule.id,
        "workspace": schedule.workspace,
        "owner": schedule.owner,
        "status": schedule.status
        + (f" ({schedule.paused_reason})" if schedule.paused_reason else ""),
        "kind": "alert" if schedule.is_alert else "question",
        "schedule": schedule.describe(zone=True),
        "next_run": f"{schedule.due_at:%Y-%m-%d %H:%M} UTC",
        "last_run": None if last is None else last.outcome,
        "question": schedule.question,
    }


async def _listing(store: ScheduleStore, args: argparse.Namespace) -> list[Schedule]:
    if args.owner:
        found = await store.owned_by(args.owner)
        return [s for s in found if not args.workspace or s.workspace == args.workspace]
    if args.workspace:
        return await store.in_workspace(args.workspace)
    return await store.every()


async def _run(args: argparse.Namespace) -> int:
    from agent_core.state_factory import build_state
    from bots.serving import load_config

    state = build_state(load_config(args).state)
    try:
        if args.pause_all or args.resume_all:
            await state.schedules.pause_workspace(
                args.pause_all or args.resume_all, paused=bool(args.pause_all)
            )
            print("paused" if args.pause_all else "resumed", args.pause_all or args.resume_all)
            return 0
        _print([row(s) for s in await _listing(state.schedules, args)], as_json=args.json)
        return 0
    finally:
        await state.aclose()


def _print(rows: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        for found in rows:
            print(json.dumps(found))
        return
    if not rows:
        print("no schedules")
        return
    for found in rows:
        question = (
            found["question"] if len(found["question"]) <= 60 else found["question"][:59] + "…"
        )
        print(
            f"{found['id']}  {found['workspace']}  {found['owner']}  {found['status']}  "
            f"{found['kind']}  {found['schedule']}  next {found['next_run']}  {question}"
        )


def run(args: argparse.Namespace) -> int:
    from agent_core.errors import StateUnavailableError
    from agent_core.settings import ConfigError

    try:
        return asyncio.run(_run(args))
    except ConfigError as error:
        print(f"threadline schedules: {error}", file=sys.stderr)
        return 2
    except StateUnavailableError as error:
        print(f"threadline schedules: {error}", file=sys.stderr)
        return 1
