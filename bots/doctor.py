"""``threadline doctor``: is this deployment ready? One line per check, ✓ or ✗ with the fix.

    configuration    threadline.toml + .env + environment validate (every problem listed)
    your agent       --app / THREADLINE_APP imports and builds
    model            the provider accepts the credentials and knows the model, asked without
                     generating (a model lookup, or a token count on Bedrock, Vertex, Foundry)
    state            SQLite writable, or Redis reachable
    database         THREADLINE_DATABASE_URL (and each profile's own) answers; loudly when
                     its user could write, refused for a superuser; each mapped role and
                     group URL: exists, may be taken, could write, sees a table
    MCP servers      each [[mcp]] server: reachable, its tools, how people sign in
    Slack, Teams     the bot token and its scopes; the bot's credentials get a token

The exit status is 1 when any check fails, so a deploy script can stop on it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from agent_core.database.checks import DatabaseReport
    from agent_core.database.settings import DatabaseConfig
    from agent_core.settings import Section
    from bots.checks import Check
    from bots.serving import Config
    from bots.slack.settings import SlackSettings
    from bots.teams.settings import TeamsSettings

S = TypeVar("S", bound="Section")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)


async def _agent(config: Config) -> Check:
    from agent_core import InMemoryAgentMemory, MemoryConversationStore, Runtime
    from agent_core.agent import LOCAL_USER
    from agent_core.users import StaticUserResolver
    from bots.apps import AppError
    from bots.checks import Check
    from bots.serving import model_service, user_agent

    target = config.general.app
    if not target:
        return Check.skipped("your agent", "none given (--app): the built-in SQL agent answers")
    runtime = Runtime(
        channel="console",
        conversation_store=MemoryConversationStore(),
        agent_memory=InMemoryAgentMemory(),
        user_resolver=StaticUserResolver(LOCAL_USER),
        llm_service=model_service(config.model),
    )
    try:
        agent = user_agent(target, runtime)
    except AppError as error:
        return Check.failed("your agent", str(error).splitlines()[0])
    tools = ", ".join(agent.tool_registry.list_tool_names()) or "no tools"
    return Check.passed("your agent", f"{target} ({tools})")


async def _model(config: Config) -> Check:
    """The configured provider, asked without generating (``agent_core.llm.probe``)."""
    from agent_core.llm.probe import probe
    from bots.checks import Check

    verdict = await probe(config.model)
    if verdict.skipped:
        return Check.skipped("model", verdict.detail)
    return (
        Check.passed("model", verdict.detail)
        if verdict.ok
        else Check.failed("model", verdict.detail)
    )


async def _state(config: Config) -> Check:
    from agent_core.errors import StateUnavailableError
    from agent_core.state_factory import build_state
    from bots.checks import Check

    settings = config.state
    state = build_state(settings)
    try:
        health = await state.health()
        if health.ok:
            await state.cache.set("threadline:doctor", "ok", ttl=60)
    except (StateUnavailableError, OSError) as error:
        return Check.failed("state", f"{settings.describe()}: {error}")
    finally:
        await state.aclose()
    if not health.ok:
        return Check.failed("state", f"{settings.describe()}: {health.detail}")
    return Check.passed("state", settings.describe())


async def _databases(config: Config) -> list[Check]:
    """``[database]`` and each profile's own database, with every mapped identity."""
    from bots.checks import Check

    found = []
    settings = config.database
    if settings.url is None:
        found.append(Check.skipped("database", "none set (THREADLINE_DATABASE_URL): the demo shop"))
    else:
        found += await _database(settings.config(), "default", "database")
    for profile in config.general.profiles:
        if profile.database is not None:
            found += await _database(profile.database, profile.name, f"database ({profile.name})")
    return found


async def _database(database: DatabaseConfig, name: str, what: str) -> list[Check]:
    from agent_core.database.access import DataAccess
    from agent_core.database.access_checks import check_access
    from agent_core.database.urls import DatabaseConfigError
    from bots.checks import Check

    try:
        access = DataAccess(database, name=name)
    except DatabaseConfigError as error:
        return [Check.failed(what, str(error))]
    report = await check_access(access)
    assert report.database is not None
    found = [_main_database(what, report.database)]
    for key, url in {**report.urls, **report.connected_roles}.items():
        label = f"{what} url {key!r}" if key in report.urls else f"{what} role {key!r}"
        found.append(_main_database(label, url))
    for role in report.roles:
        label = f"{what} role {role.role!r}"
        if role.problem:
            found.append(Check.failed(label, role.problem))
        elif role.warning:
            found.append(Check.warned(label, role.warning))
        else:
            found.append(Check.passed(label, f"reads {role.readable_tables} tables"))
    if report.roles_error:
        found.append(Check.failed(f"{what} roles", f"not checked: {report.roles_error}"))
    return found


def _main_database(what: str, report: DatabaseReport) -> Check:
    from bots.checks import Check

    if report.refused:
        return Check.failed(what, f"{report.url}: {report.error}")
    if not report.reachable:
        return Check.failed(what, f"{report.url}: unreachable: {report.error}")
    if report.privileged:
        return Check.warned(what, f"{report.url}: {report.privileged}")
    access = report.write_access
    if access is not None and access.status == "can_write":
        return Check.warned(what, f"{report.url}: {access.message}")
    detail = f"{report.url} ({report.dialect}), {report.read_only_mode}"
    return Check.passed(what, detail + (f"; {access.message}" if access else ""))


async def _channel(
    args: argparse.Namespace,
    config: Config,
    kind: type[S],
    checks: Callable[[S], Awaitable[list[Check]]],
) -> list[Check]:
    """A channel's checks, when anything configures it."""
    from agent_core.settings import ConfigError, mentioned
    from bots.checks import Check
    from bots.serving import channel_config

    name = kind.table.capitalize()
    if not mentioned(kind, file=config.loaded.file, dotenv=config.dotenv):
        return [Check.skipped(name, "not configured")]
    try:  # what is set is checked even when something else is missing
        section = channel_config(args, kind, partial=True)
    except ConfigError as error:
        return [Check.failed(f"{name} settings", str(problem)) for problem in error.problems]
    missing = [Check.failed(f"{name} settings", problem) for problem in section.problems()]
    return missing + await checks(section)


async def diagnose(args: argparse.Namespace) -> list[Check]:
    """Every check, in order; the configuration first (the rest need it)."""
    from agent_core.settings import ConfigError
    from bots.checks import Check
    from bots.serving import load_config

    try:
        config = load_config(args)
    except ConfigError as error:
        return [Check.failed("configuration", str(problem)) for problem in error.problems]
    source = config.loaded.file.name if config.loaded.file else "environment only"
    found = [Check.passed("configuration", source)]
    from bots.slack.settings import SlackSettings
    from bots.teams.settings import TeamsSettings

    found += [await _agent(config), await _model(config), await _state(config)]
    found += await _databases(config)
    found += await _mcp(config)
    found += await _channel(args, config, SlackSettings, partial(_slack_checks, config))
    return found + await _channel(args, config, TeamsSettings, _teams_checks)


async def _mcp(config: Config) -> list[Check]:
    from agent_core.mcp.settings import McpSettings
    from agent_core.state import MemoryKeyValueStore
    from bots.mcp import doctor_checks

    settings = config.get(McpSettings)
    return await doctor_checks(settings, config.general.profiles, MemoryKeyValueStore())


def _missing_extra(extra: str) -> list[Check]:
    """A configured channel whose extra is not installed: one failed line saying how."""
    from bots.checks import Check
    from bots.extras import missing

    absent = missing(extra)
    if not absent:
        return []
    fix = f"configured, but the '{extra}' extra is not: pip install 'threadline[{extra}]'"
    return [Check.failed(f"{extra.capitalize()} packages", fix)]


async def _slack_checks(config: Config, section: SlackSettings) -> list[Check]:
    """With OAuth, installations live in the state: read there (stopped ones are listed)."""
    from agent_core.state_factory import build_state
    from bots.slack import doctor as slack

    missing = _missing_extra("slack")
    if missing or not section.oauth_enabled:
        return missing + await slack.checks(section)
    state = build_state(config.state)
    try:
        return await slack.checks(section, state.records)
    except Exception as error:  # the state check above says what is wrong with it
        from bots.checks import Check

        return [Check.skipped("Slack installations", f"state unavailable: {error}")]
    finally:
        await state.aclose()


async def _teams_checks(section: TeamsSettings) -> list[Check]:
    if problems := _missing_extra("teams"):
        return problems  # its checks need botbuilder
    from bots.teams import doctor as teams

    return await teams.checks(section)


def run(args: argparse.Namespace) -> int:
    found = asyncio.run(diagnose(args))
    for check in found:
        print(check)
    failed = sum(check.status == "fail" for check in found)
    warned = sum(check.status == "warn" for check in found)
    if failed:
        print(f"\n{failed} problem(s)", file=sys.stderr)
    else:
        print(f"\nready, {warned} warning(s)" if warned else "\nready")
    return 1 if failed else 0
