"""``threadline``: the command line. ``threadline --help`` is its manual.

Each subcommand lives in its own module (``add_arguments(parser)`` and ``run(args) -> int``),
imported when the parser is built; the heavy parts (the agent, aiohttp, botbuilder) only when
the command runs, so ``threadline chat`` never pays for botbuilder. A command whose extra is
not installed stops with the ``pip install`` line that brings it (``bots.extras``). The help
of each command lists the environment variables it reads, taken from the settings it loads,
so it cannot drift from them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.settings import Section

DESCRIPTION = """\
Threadline puts an LLM agent into Slack and Microsoft Teams threads: it answers in the
thread, runs tools (SQL over your database, charts, memory) under the permissions of the
person asking, and streams its answers with native tables and charts."""

EPILOG = """\
start here:
  threadline dev                       the console at http://127.0.0.1:8765 (no keys needed)
  threadline chat                      the same agent in this terminal
  threadline dev --app examples/weather.py:agent --reload    your own agent

then:
  threadline doctor                    check the configuration, model key, state, channels
  threadline slack | teams             serve the agent in Slack or Teams

`threadline COMMAND --help` lists each command's options, the environment it reads and
examples. Settings come from threadline.toml, .env and the environment (which wins)."""


@dataclass(frozen=True)
class Command:
    """One subcommand: where it lives and how its help reads."""

    module: str
    summary: str
    description: str
    examples: tuple[str, ...] = ()
    extra: str | None = None
    """The extra the command needs (``bots.extras``), if any."""
    reads: Callable[[], list[tuple[str, list[str]]]] | None = None
    """The environment variables it reads, by table, computed when help is printed."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _variables(kind: type[Section], only: Sequence[str] | None = None) -> list[str]:
    """The environment variables ``kind`` reads (a field's aliases after its file key)."""
    from pydantic import AliasChoices

    names: list[str] = []
    for name, info in kind.model_fields.items():
        alias = info.validation_alias
        if only is not None and name not in only:
            continue
        if isinstance(alias, AliasChoices):
            names += [str(choice) for choice in alias.choices[1:]]
    return list(dict.fromkeys(names))


def _table(kind: type[Section], only: Sequence[str] | None = None) -> tuple[str, list[str]]:
    return (f"[{kind.table}]" if kind.table else "(top)", _variables(kind, only))


def _shared(*, local: bool) -> list[tuple[str, list[str]]]:
    from agent_core.database.settings import DatabaseSettings
    from agent_core.state_factory import StateSettings
    from bots.serving import GeneralSettings, ModelSettings

    state = ["data_dir"] if local else None
    return [
        _table(GeneralSettings),
        _table(ModelSettings),
        _table(DatabaseSettings),
        _table(StateSettings, state),
    ]


def _local_reads() -> list[tuple[str, list[str]]]:
    return _shared(local=True)


def _slack_reads() -> list[tuple[str, list[str]]]:
    from bots.slack.settings import SlackSettings

    return [_table(SlackSettings), *_shared(local=False)]


def _teams_reads() -> list[tuple[str, list[str]]]:
    from bots.teams.settings import TeamsSettings

    return [_table(TeamsSettings), *_shared(local=False)]


def _all_reads() -> list[tuple[str, list[str]]]:
    return [*_slack_reads()[:1], *_teams_reads()[:1], *_shared(local=False)]


def _schedule_reads() -> list[tuple[str, list[str]]]:
    from agent_core.schedules.settings import ScheduleSettings
    from agent_core.state_factory import StateSettings

    return [_table(StateSettings), _table(ScheduleSettings)]


def _state_reads() -> list[tuple[str, list[str]]]:
    from agent_core.state_factory import StateSettings

    return [_table(StateSettings)]


def _retention_reads() -> list[tuple[str, list[str]]]:
    from agent_core.retention import RetentionSettings

    return [*_state_reads(), _table(RetentionSettings)]


def _package_reads() -> list[tuple[str, list[str]]]:
    return [("(top)", ["MicrosoftAppId"])]


COMMANDS: dict[str, Command] = {
    "dev": Command(
        "bots.dev.server",
        "the local console: ask in a browser, see the Slack and Teams replies side by side",
        "Serves the local console on 127.0.0.1: ask a question and watch the same answer "
        "reach a Slack pane and a Teams pane (Microsoft's Adaptive Cards renderer) as the "
        "real adapters deliver it, switch who asks (a user, an admin) and where (a DM, a "
        "channel), stop an answer, see the raw payloads. Nothing leaves the machine: the "
        "Slack and Teams APIs are the shipped fakes. Without ANTHROPIC_API_KEY a labelled "
        "scripted model answers questions about a generated sample shop.",
        examples=(
            "threadline dev --open",
            "threadline dev --app examples/weather.py:agent --reload",
            "ANTHROPIC_API_KEY=sk-ant-... threadline dev --real-pace",
        ),
        reads=_local_reads,
    ),
    "chat": Command(
        "bots.dev.chat",
        "the agent in this terminal: rendered answers, tables, charts, history",
        "Talks to the agent in the terminal: answers stream as rendered Markdown, tables are "
        "drawn, charts show inline in terminals that display images (kitty, iTerm2, WezTerm, "
        "sixel) and are saved under the data directory otherwise. Up/Down recall earlier "
        "questions (kept across sessions); Ctrl-C stops an answer, Ctrl-D quits. /user and "
        "/admin switch who asks, /new starts over; /help lists the agent's own commands.",
        examples=("threadline chat", "threadline chat --as admin --app mybot:build"),
        reads=_local_reads,
    ),
    "slack": Command(
        "bots.slack.app",
        "serve the agent in Slack (Socket Mode or HTTP events)",
        "Runs the Slack bot: mentions, DMs, the assistant pane and the /ask command, with "
        "answers streamed into the thread. Socket Mode when SLACK_APP_TOKEN is set (no "
        "public URL needed), else HTTP on /slack/events with /healthz and /metrics beside "
        "it. `threadline slack-manifest` prints the app manifest to create the app from.",
        examples=(
            "SLACK_APP_TOKEN=xapp-... SLACK_BOT_TOKEN=xoxb-... threadline slack",
            "SLACK_SIGNING_SECRET=... SLACK_BOT_TOKEN=xoxb-... threadline slack --port 3000",
            "REDIS_URL=redis://localhost:6379/0 threadline slack --processes 4",
        ),
        extra="slack",
        reads=_slack_reads,
    ),
    "slack-manifest": Command(
        "bots.slack.manifest",
        "print the Slack app manifest (Socket Mode, or HTTP mode with --http URL)",
        "Prints the manifest to paste in api.slack.com/apps -> Create New App -> From a "
        "manifest. By default the app uses Socket Mode; --http https://HOST fills in the "
        "event, interactivity, slash command and OAuth redirect URLs for HTTP mode; "
        "--token-rotation asks for expiring tokens. The app is always org-ready (Enterprise "
        "Grid; Workflow Builder lists only org-ready apps' steps).",
        examples=(
            "threadline slack-manifest > manifest.yml",
            "threadline slack-manifest --http https://bot.example.com",
            "threadline slack-manifest --http https://bot.example.com --token-rotation",
        ),
    ),
    "teams": Command(
        "bots.teams.app",
        "serve the agent in Microsoft Teams on /api/messages",
        "Runs the Teams bot: personal chats, group chats and channels (when mentioned), "
        "answers streamed in personal chats, admin-only detail sent privately. Without "
        "MicrosoftAppId authentication is off (local testing only).",
        examples=(
            "MicrosoftAppType=SingleTenant MicrosoftAppId=... MicrosoftAppPassword=... "
            "MicrosoftAppTenantId=... threadline teams",
        ),
        extra="teams",
        reads=_teams_reads,
    ),
    "teams-package": Command(
        "bots.teams.package",
        "write the Teams app package to upload (manifest, icons, zip)",
        "Writes manifest.json, the two icons and the zip to upload in Teams (Apps -> Manage "
        "your apps -> Upload an app). The website, privacy and terms URLs are yours to give: "
        "the command refuses placeholder URLs unless --allow-placeholders (local testing).",
        examples=(
            "threadline teams-package --app-id 3f2504e0-4f89-11d3-9a0c-0305e82c3301 "
            "--website https://acme.io --privacy-url https://acme.io/privacy "
            "--terms-url https://acme.io/terms --out dist/teams",
        ),
        extra="teams",
        reads=_package_reads,
    ),
    "config": Command(
        "bots.config",
        "show every setting and where it came from (file and line, .env, variable, default)",
        "Prints every setting of threadline.toml + .env + the environment with its origin, "
        "secrets masked; a wrong key or type is listed as every command would refuse it.",
        examples=("threadline config", "threadline config --json | jq .setting"),
        reads=_all_reads,
    ),
    "usage": Command(
        "bots.usage_command",
        "what the LLM cost today and lately, and who spent it",
        "Prints the LLM usage the bots recorded in the state (SQLite in THREADLINE_DATA_DIR, "
        "or Redis): today's and the period's tokens (input, cache read, cache write, output), "
        "calls and cost at [usage.prices] over the dated list prices, and the top people, "
        "profiles and models. A model with no price is counted in tokens, its cost unknown.",
        examples=("threadline usage", "threadline usage --days 30 --json"),
        reads=_local_reads,
    ),
    "doctor": Command(
        "bots.doctor",
        "check the configuration, your agent, the model key, state and channels",
        "Checks, one line each: the configuration, that your agent loads, the model key (a "
        "model lookup: no tokens spent), the state store, the Slack token and its scopes, "
        "the Teams credentials. Exit status 1 when anything fails.",
        examples=("threadline doctor", "threadline doctor --config prod.toml"),
        reads=_all_reads,
    ),
    "train": Command(
        "bots.train",
        "read your database's schema (and your docs and examples) into the schema cache",
        "Checks the database (reachable? can the user write?), introspects its tables, "
        "columns, keys and comments, and reads a folder of documentation (*.md) and question "
        "-> SQL examples (*.sql) into the cache every command starts from. The agent also "
        "refreshes it by itself; run this after a schema change.",
        examples=(
            "THREADLINE_DATABASE_URL=postgresql://reader:...@db/shop threadline train",
            "threadline train --training-dir docs/data",
        ),
        reads=_local_reads,
    ),
    "schedules": Command(
        "bots.schedules.cli",
        "list the scheduled questions and alerts (operators); pause or resume a workspace's",
        "Prints every schedule in the shared state (Redis, or the SQLite files of the data "
        "directory): id, workspace, owner, status, when it runs, its next run and what it "
        "asks. --pause-all skips every run of a workspace until --resume-all, as an admin's "
        "`/schedules pause-all` does.",
        examples=(
            "threadline schedules",
            "REDIS_URL=redis://cache:6379/0 threadline schedules --workspace slack:T0123 --json",
            "threadline schedules --pause-all slack:T0123",
        ),
        reads=_schedule_reads,
    ),
    "audit": Command(
        "bots.audit_command",
        "export the hash-chained audit trail, or verify nobody edited it",
        "Reads the audit trail the bots write to the state (SQLite in THREADLINE_DATA_DIR, "
        "or Redis): `export` prints the records of a span (questions, tool calls, approvals, "
        "commands, refusals, sign-ins, budget stops, erasures) as JSON Lines or CSV, each "
        "person's pseudonym beside who it stands for; `verify` walks the hash chain and "
        "names the first record edited, removed or inserted (exit status 1).",
        examples=(
            "threadline audit export --since 2026-11-01 --until 2026-12-01 --format csv",
            "REDIS_URL=redis://cache:6379/0 threadline audit export --workspace slack:T0123",
            "threadline audit verify",
        ),
        reads=_state_reads,
    ),
    "forget": Command(
        "bots.forget_command",
        "erase a person from every store (a leaver, a data-subject request)",
        "Erases one person from the state the bots share (SQLite in THREADLINE_DATA_DIR, or "
        "Redis), every profile and workspace: conversations, memories, schedules they own, "
        "approvals they asked for, Slack thread transcripts, identity caches and MCP "
        "tokens. The usage ledger and the audit trail keep a pseudonym instead, so totals "
        "and the record stay true (the audit chain still verifies); the erase is itself an "
        "audit record. --dry-run lists what would go.",
        examples=(
            "threadline forget slack:T0123:U0456 --dry-run",
            "threadline forget ana@example.com",
            "REDIS_URL=redis://cache:6379/0 threadline forget teams:TENANT:OBJECT_ID",
        ),
        reads=_state_reads,
    ),
    "retention": Command(
        "bots.retention_command",
        "remove what is older than [retention] says (run it daily)",
        "Deletes, in the state the bots share (SQLite in THREADLINE_DATA_DIR, or Redis), "
        "the conversations, memories and usage older than the [retention] settings (days; "
        '"keep" keeps). The audit trail and schedules are kept. Safe to run from several '
        "places at once: each step deletes what is older than its cut-off.",
        examples=("threadline retention", "threadline retention --json"),
        reads=_retention_reads,
    ),
    "eval": Command(
        "bots.eval",
        "measure the agent's execution accuracy on a file of questions",
        "Runs each question of a JSON Lines file through the configured agent and database "
        "and compares the result with the expected SQL's or values; prints per-question "
        "pass/fail with the SQL the agent ran, tokens and time, then a JSON summary. Without "
        "a file, the demo shop's starter questions.",
        examples=("threadline eval", "threadline eval questions.jsonl --min-accuracy 0.8"),
        reads=_local_reads,
    ),
}


def _environment(reads: Callable[[], list[tuple[str, list[str]]]]) -> str:
    lines = [
        "environment (or the same keys in threadline.toml; `threadline config` shows each value):"
    ]
    for table, names in reads():
        if names:
            wrapped = textwrap.wrap(" ".join(names), width=78 - 18)
            lines += [f"  {table if i == 0 else '':<16}{line}" for i, line in enumerate(wrapped)]
    return "\n".join(lines)


def epilog(command: Command) -> str:
    """The end of a command's help: what it needs, the environment it reads, examples."""
    parts: list[str] = []
    if command.extra:
        extra = command.extra
        parts.append(f"needs the '{extra}' extra: pip install 'threadline[{extra}]'")
    if command.reads is not None:
        parts.append(_environment(command.reads))
    if command.examples:
        parts.append("examples:\n" + "\n".join(f"  {e}" for e in command.examples))
    return "\n\n".join(parts)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose epilog is computed only when help is printed (it imports
    the settings of the command)."""

    epilog_of: Command | None = None

    def format_help(self) -> str:
        if self.epilog_of is not None and self.epilog is None:
            self.epilog = epilog(self.epilog_of)
        return super().format_help()


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("threadline")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _add_command(commands: Any, name: str, command: Command) -> None:
    sub: CommandParser = commands.add_parser(
        name,
        help=command.summary,
        description=textwrap.fill(command.description, 88),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.epilog_of = command
    sub.set_defaults(module=command.module, extra=command.extra, command_name=name)
    try:
        module = importlib.import_module(command.module)
    except ModuleNotFoundError as missing:
        if missing.name is None or command.module.startswith(missing.name):
            raise  # our own module is missing: a broken install, not a missing extra
        sub.set_defaults(unavailable=missing.name)
        return
    module.add_arguments(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="threadline",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"threadline {version()}")
    commands = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        title="commands",
        parser_class=CommandParser,
    )
    for name, command in COMMANDS.items():
        _add_command(commands, name, command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from agent_core.masking import mask_every_log
    from bots.extras import MissingExtra, require

    mask_every_log()  # no password inside a URL reaches a log line, whoever logs it
    args = build_parser().parse_args(argv)
    name = args.command_name  # ``args.command`` may be an option of the command (slack)
    try:
        if args.extra is not None:
            require(args.extra, f"threadline {name}")
        if getattr(args, "unavailable", None):
            print(
                f"threadline {name}: {args.unavailable} is not installed; "
                "pip install 'threadline[all]' brings every optional part",
                file=sys.stderr,
            )
            return 2
        return int(importlib.import_module(args.module).run(args))
    except MissingExtra as error:
        print(error, file=sys.stderr)  # "threadline slack needs the 'slack' extra (...)"
        return 2
    except ValueError as error:
        from agent_core.database.urls import DatabaseConfigError

        if not isinstance(error, DatabaseConfigError):
            raise
        print(f"threadline {name}: {error}", file=sys.stderr)  # e.g. a missing driver
        return 2


if __name__ == "__main__":
    sys.exit(main())
