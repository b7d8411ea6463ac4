"""What every command serves: the configuration, the model, and the agent on a channel.

``threadline dev | chat | slack | teams`` all do the same thing here::

    config = load_config(args, SlackSettings)        # threadline.toml + .env + environment
    build = agent_factory(config, "slack")            # (state, resolver) -> the agent served
    agent = build(state, workspace_resolver)

The agent is the user's (``--app MODULE:ATTR``, ``THREADLINE_APP`` or ``app`` in the file),
given the channel's ``Runtime`` (durable state, workspace identity, the configured model), or
else the built-in SQL agent over the configured database (the demo shop by default). With
``[[profiles]]`` in the file, each profile gets its own agent (``bots.profiles``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field

from adapters.fetch import OutboundSettings
from agent_core.approvals.settings import ApprovalSettings, ToolSettings
from agent_core.audit_settings import AuditSettings
from agent_core.database.settings import DatabaseConfig, DatabaseSettings
from agent_core.llm.settings import ModelSettings as ModelSettings
from agent_core.mcp.settings import McpSettings
from agent_core.retention import RetentionSettings
from agent_core.schedules.settings import ScheduleSettings
from agent_core.settings import (
    CONFIG_FILE,
    DOTENV_FILE,
    ConfigError,
    ConfigProblem,
    Loaded,
    Section,
    env,
    load_sections,
)
from agent_core.state_factory import StateSettings
from agent_core.usage.budget_settings import BudgetSettings
from agent_core.usage.settings import UsageSettings
from bots.profiles import Profile, check_profiles

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.llm.base import LlmService
    from agent_core.runtime import Channel, Runtime
    from agent_core.state_factory import State
    from agent_core.users import UserResolver
    from bots.profiles import ProfileRouter

    AgentFactory = Callable[[State, UserResolver], "Agent | ProfileRouter"]

log = logging.getLogger("threadline")

S = TypeVar("S", bound=Section)


class GeneralSettings(Section):
    """The top level of ``threadline.toml``: which agent, and the profiles."""

    app: str | None = Field(None, validation_alias=env("app", "THREADLINE_APP"))
    """``MODULE:ATTR`` of your agent (or a function building it); unset: the built-in one."""
    profiles: list[Profile] = Field(default_factory=list)
    """``[[profiles]]``: agents, data and who may ask, per channel (``bots.profiles``)."""


SHARED: tuple[type[Section], ...] = (
    GeneralSettings,
    ModelSettings,
    StateSettings,
    DatabaseSettings,
    ScheduleSettings,
    UsageSettings,
    BudgetSettings,
    McpSettings,
    OutboundSettings,
    ApprovalSettings,
    ToolSettings,
    AuditSettings,
    RetentionSettings,
)


def channel_sections() -> tuple[type[Section], ...]:
    """The channels' own tables (``[slack]``, ``[teams]``), which every command accepts in
    the file even when it serves another channel."""
    from bots.slack.settings import SlackSettings
    from bots.teams.settings import TeamsSettings

    return (SlackSettings, TeamsSettings)


@dataclass
class Config:
    """One command's validated configuration and where each value came from."""

    loaded: Loaded
    dotenv: Path | None = None
    command: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    """Options of the command that are not settings (``--stream-delay``...)."""

    def get(self, kind: type[S]) -> S:
        return self.loaded.section(kind)

    @property
    def general(self) -> GeneralSettings:
        return self.get(GeneralSettings)

    @property
    def model(self) -> ModelSettings:
        return self.get(ModelSettings)

    @property
    def state(self) -> StateSettings:
        """``[state]``, its conversations kept as ``[retention] conversations`` says unless
        ``[state] conversation_retention_days`` (the older setting) says otherwise."""
        state = self.get(StateSettings)
        days = self.get(RetentionSettings).days("conversations")
        if state.conversation_retention_days is None and days is not None:
            return state.model_copy(update={"conversation_retention_days": days})
        return state

    @property
    def database(self) -> DatabaseSettings:
        return self.get(DatabaseSettings)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--app``, which every serving command takes."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help=f"configuration file (default: ./{CONFIG_FILE} when present)",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="your agent: an Agent, or a function returning one (given the channel's "
        "Runtime when it takes an argument); default $THREADLINE_APP, else the built-in "
        "SQL agent",
    )


def config_file(args: argparse.Namespace) -> Path | None:
    """``--config FILE`` (which must exist), else ``./threadline.toml`` when present."""
    given = getattr(args, "config", None)
    if given is not None:
        if not Path(given).is_file():
            raise ConfigError([ConfigProblem(str(given), "no such configuration file")])
        return Path(given)
    default = Path(CONFIG_FILE)
    return default if default.is_file() else None


def add_log_level(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, the same option for every bot's server."""
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")


def log_to_stderr(level: str = "INFO") -> None:
    """Every bot server's log lines, one format: time, level, logger, message."""
    logging.basicConfig(
        level=getattr(logging, str(level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def load_config(
    args: argparse.Namespace,
    *channel: type[Section],
    overrides: dict[type[Section], dict[str, Any]] | None = None,
) -> Config:
    """The command's configuration; raises ``ConfigError`` listing every problem."""
    given = {kind: dict(values) for kind, values in (overrides or {}).items()}
    if getattr(args, "app", None):
        given.setdefault(GeneralSettings, {})["app"] = args.app
    dotenv = Path(DOTENV_FILE)
    loaded = load_sections(
        [*SHARED, *channel],
        file=config_file(args),
        dotenv=dotenv,
        overrides=given,
        known=channel_sections(),
    )
    general = loaded.section(GeneralSettings)
    problems = check_profiles(general.profiles, loaded.file)
    from bots.mcp import check as check_mcp

    command = getattr(args, "command_name", None) or getattr(args, "command", None)
    local = command in ("dev", "chat")  # the console, the chat: sign-ins on this machine
    problems += check_mcp(loaded.section(McpSettings), general.profiles, local=local)
    if problems:
        raise ConfigError(problems)
    return Config(loaded, dotenv=dotenv, command=str(getattr(args, "command", "") or ""))


def server_overrides(
    args: argparse.Namespace, channel: type[Section], options: dict[str, Any]
) -> dict[type[Section], dict[str, Any]]:
    """What a channel server's command line says over the configuration: the channel's own
    ``options`` (those given), ``--ephemeral`` and ``--scripted``."""
    overrides: dict[type[Section], dict[str, Any]] = {
        channel: {name: value for name, value in options.items() if value is not None}
    }
    if args.ephemeral:
        overrides[StateSettings] = {"ephemeral": True}
    if args.scripted:
        overrides[ModelSettings] = {"scripted": True}
    return overrides


def channel_config(args: argparse.Namespace, kind: type[S], *, partial: bool = False) -> S:
    """One channel's settings alone (``threadline doctor``, ``threadline config``);
    ``partial``: without checking what the section lacks as a whole (``problems()``)."""
    known: tuple[type[Section], ...] = (*SHARED, *channel_sections())
    dotenv = Path(DOTENV_FILE)
    loaded = load_sections(
        [kind], file=config_file(args), dotenv=dotenv, known=known, partial=partial
    )
    return loaded.section(kind)


def model_service(model: ModelSettings) -> LlmService | None:
    """Claude where ``[llm] provider`` says it runs (``None``: the scripted demo model);
    raises ``ConfigError`` naming the setting a platform's credentials miss."""
    from agent_core.llm.providers import build_llm_service

    return build_llm_service(model)


def agent_factory(config: Config, channel: Channel) -> AgentFactory:
    """``build(state, resolver)``: the agent (or profile router) this command serves."""

    def build(state: State, resolver: UserResolver) -> Agent | ProfileRouter:
        from agent_core.approvals.book import ApprovalBook
        from agent_core.runtime import Runtime

        runtime = Runtime(
            channel=channel,
            conversation_store=state.conversations,
            agent_memory=state.memory,
            user_resolver=resolver,
            llm_service=model_service(config.model),
            approval_book=ApprovalBook(state.records),  # any process decides and resumes
            approvals=config.get(ApprovalSettings).policy(config.get(ToolSettings)),
        )
        from bots.usage import attach_usage

        served = _served(config, runtime)
        # usage recorded, budgets held, /usage
        attach_usage(served, state, config.get(UsageSettings), config.get(BudgetSettings))
        from bots.audit import attach_audit

        attach_audit(served, state, config.get(AuditSettings))  # the trail, every agent
        from bots.forget_tool import attach_forget

        attach_forget(served, state)  # /forget @person: admins, approved by an admin
        from bots.mcp import attach_configured

        # [[mcp]] servers' tools, one hub per process (closed with the bot: bots.mcp)
        attach_configured(
            served,
            state.cache,
            config.get(McpSettings),
            config.general.profiles,
            callback_url=config.extras.get("mcp_callback_url"),
            local=channel in ("console", "chat"),
        )
        return served

    return build


def _served(config: Config, runtime: Runtime) -> Agent | ProfileRouter:
    default = _agent(config, runtime, config.general.app)
    profiles = config.general.profiles
    if not profiles:
        return default
    from bots.profiles import ProfileRouter, profile_agent

    routed = {
        profile.name: profile_agent(
            profile,
            runtime,
            lambda app, rt: _agent(config, rt, app),
            default_app=config.general.app,
        )
        for profile in profiles
    }
    return ProfileRouter(default, profiles, routed)


def _agent(config: Config, runtime: Runtime, app: str | None) -> Agent:
    if app:
        return user_agent(app, runtime)
    from agent_core.runtime import attach

    agent = builtin_agent(config, runtime)
    attach(agent, runtime)  # what it left out: the approvals, under the configured policy
    return agent


_told: set[tuple[str, str]] = set()


def user_agent(target: str, runtime: Runtime) -> Agent:
    """The user's agent, given the parts of ``runtime`` it left out (the log says, once,
    which parts it kept its own)."""
    from agent_core.runtime import attach
    from bots.apps import load_agent

    agent = load_agent(target, runtime)
    kept = attach(agent, runtime)
    if kept and (target, runtime.channel) not in _told:
        _told.add((target, runtime.channel))
        log.info(
            "%s brings its own %s (kept); the %s channel provides the rest",
            target,
            ", ".join(kept),
            runtime.channel,
        )
    return agent


def builtin_agent(config: Config, runtime: Runtime) -> Agent:
    """The built-in SQL agent: over the profile's own database when it names one, else over
    ``[database]`` (the demo shop unless its ``url`` is set)."""
    from bots.demo.agent import DemoSettings, build_demo_agent

    model = config.model
    name, database = database_of(config, runtime.profile)
    settings = DemoSettings(
        data_dir=config.state.data_dir,
        database=database,
        database_name=name,
        anthropic_api_key=model.api_key,
        anthropic_model=model.model,
        anthropic_base_url=model.base_url,
        llm_service=runtime.llm_service,
        use_scripted_model=model.scripted,
        stream_delay=model.stream_delay,
        conversation_store=runtime.conversation_store,
        agent_memory=runtime.agent_memory,
        user_resolver=runtime.user_resolver,
    )
    return build_demo_agent(settings)


def database_of(config: Config, profile: str | None) -> tuple[str, DatabaseConfig]:
    """The database a profile answers from: its own ``database`` (named after the profile),
    else ``[database]`` (``default``)."""
    for candidate in config.general.profiles:
        if candidate.name == profile and candidate.database is not None:
            return candidate.name, candidate.database
    return "default", config.database.config()


def add_quota(served: Agent | ProfileRouter, state: State, quota: tuple[int, float] | None) -> None:
    """The per-user quota (``THREADLINE_RATE_LIMIT``) on every agent served; admins are
    exempt. The count lives in ``state``, so every process shares it."""
    if quota is None:
        return
    limit, window = quota
    hook = state.rate_limit_hook(limit=limit, window=window, exempt_groups=["admin"])
    for agent in served.served_agents():
        agent.lifecycle_hooks.append(hook)
