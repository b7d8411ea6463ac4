"""``threadline forget PERSON``: erase a person from every store (``agent_core.forget``).

PERSON is their id (``slack:T0123:U0456``, ``teams:TENANT:OBJECT_ID``), a bare Slack or
Teams id, or their email (looked up in the audit trail's directory of people).
``--dry-run`` lists what would go and erases nothing. The usage ledger and the audit trail
keep the person's pseudonym, so totals and the record stay true; the erase is itself an
audit record.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.forget import ForgetReport
    from bots.serving import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument("person", metavar="PERSON", help="a Slack or Teams id, or an email")
    parser.add_argument("--dry-run", action="store_true", help="list what would go; erase nothing")


async def forget(config: Config, given: str, *, dry_run: bool) -> ForgetReport:
    from agent_core.forget import find_person, forget_person
    from agent_core.state_factory import build_state
    from bots.erasing import channel_steps

    state = build_state(config.state)
    try:
        ids = await find_person(state, given)
        return await forget_person(
            state, ids, given=given, dry_run=dry_run, channels=channel_steps(state)
        )
    finally:
        await state.aclose()


def run(args: argparse.Namespace) -> int:
    from agent_core.errors import StateUnavailableError
    from agent_core.forget import UnknownPerson
    from agent_core.settings import ConfigError
    from bots.serving import load_config

    try:
        config = load_config(args)
        report = asyncio.run(forget(config, args.person, dry_run=args.dry_run))
    except (ConfigError, StateUnavailableError, UnknownPerson) as error:
        print(f"threadline forget: {error}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0
