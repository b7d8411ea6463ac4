"""The agent the local tools serve (``threadline dev`` and ``threadline chat``): the same as
in Slack and Teams (``--app``, the configuration, the built-in SQL agent by default), on
in-memory state, answering whoever the console's identity switcher says is asking."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.runtime import Channel
    from agent_core.settings import Section
    from bots.agents import ServedAgent
    from bots.serving import Config


def add_local_arguments(parser: argparse.ArgumentParser, *, stream_delay: float) -> None:
    """The options both local tools take."""
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the sample database (and the chat's history and charts) live "
        "(default $THREADLINE_DATA_DIR or ~/.threadline)",
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="use the scripted demo model even when ANTHROPIC_API_KEY is set",
    )
    parser.add_argument(
        "--stream-delay",
        type=float,
        default=stream_delay,
        help=f"seconds between the scripted model's chunks (default {stream_delay})",
    )


def local_data_dir(args: argparse.Namespace) -> Path:
    """``--data-dir``, else the configured one (``THREADLINE_DATA_DIR``, ``~/.threadline``)."""
    if args.data_dir is not None:
        return Path(args.data_dir)
    from bots.serving import load_config

    return load_config(args).state.data_dir


def local_config(args: argparse.Namespace) -> Config:
    """The configuration the local tools run on: in-memory state (``--data-dir`` if given),
    the model options; raises ``ConfigError`` naming what is wrong."""
    from agent_core.state_factory import StateSettings
    from bots.serving import ModelSettings, load_config

    state_options: dict[str, Any] = {"ephemeral": True}
    if args.data_dir is not None:
        state_options["data_dir"] = args.data_dir
    model: dict[str, Any] = {"stream_delay": max(0.0, args.stream_delay)}
    if args.scripted:
        model["scripted"] = True
    overrides: dict[type[Section], dict[str, Any]] = {
        StateSettings: state_options,
        ModelSettings: model,
    }
    return load_config(args, overrides=overrides)


def local_agent(
    args: argparse.Namespace, channel: Channel, config: Config | None = None
) -> ServedAgent:
    """The configured agent (on ``config``, else ``local_config(args)``) on in-memory state
    with the console's user resolver; raises ``ConfigError`` / ``AppError`` naming what is
    wrong."""
    from agent_core.state_factory import build_state
    from bots.dev.identity import ConsoleUserResolver
    from bots.serving import agent_factory

    config = config or local_config(args)
    return agent_factory(config, channel)(build_state(config.state), ConsoleUserResolver())
