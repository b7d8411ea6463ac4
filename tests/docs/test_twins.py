"""Slack and Teams are twins (issue 23): the same module names in ``adapters/`` and in the
bots' wings, except the platform-only modules ARCHITECTURE.md names (the test reads its
list), and the wings expose the same public names for the same roles."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from bots.channel_settings import ChannelSettings

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")

WING_NAMES = {
    "app": {"add_arguments", "run", "serve", "build_web_app"},
    "bot": {"{Channel}Bot"},
    "doctor": {"checks"},
    "ingress": {"receive"},
    "kinds": {"{Channel}Kind"},
    "settings": {"{Channel}Settings"},
    "turns": {"{Channel}Wing"},
}
"""The public names each wing module has in both channels (``{Channel}``: Slack, Teams)."""

BOT_LIFECYCLE = {"agent", "settings", "state", "metrics", "turns", "open", "close", "idle"}


def modules(folder: Path) -> set[str]:
    return {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}


def platform_only(where: str, channel: str) -> set[str]:
    """The modules ARCHITECTURE.md says only ``channel`` has in ``where`` (``adapters/``
    or ``bots/``): the backticked names after "Slack's" / "Teams'" in that sentence."""
    paragraph = ARCHITECTURE.split("Modules only one channel has come from its platform")[1]
    paragraph = paragraph.split("\n\n")[0]
    part = paragraph.split(f"In `{where}`:")[1].split("In `")[0]
    own = f"{channel}'s" if channel == "Slack" else f"{channel}'"
    other = "Teams'" if channel == "Slack" else "Slack's"
    section = part.split(own)[1].split(other)[0]
    return set(re.findall(r"`([a-z_]+)`", section)) - {"ConnectorError"}


@pytest.mark.parametrize("where", ["adapters", "bots"])
def test_the_twins_differ_only_by_the_platform_only_modules_architecture_names(
    where: str,
) -> None:
    slack, teams = modules(ROOT / where / "slack"), modules(ROOT / where / "teams")
    assert slack - teams == platform_only(f"{where}/", "Slack")
    assert teams - slack == platform_only(f"{where}/", "Teams")


@pytest.mark.parametrize("module", sorted(WING_NAMES))
def test_both_wings_expose_the_same_public_names(module: str) -> None:
    for channel in ("Slack", "Teams"):
        found = importlib.import_module(f"bots.{channel.lower()}.{module}")
        for name in WING_NAMES[module]:
            assert hasattr(found, name.format(Channel=channel)), (channel, module, name)


def test_the_bots_and_their_wings_have_the_same_shape() -> None:
    from bots.slack.bot import SlackBot
    from bots.slack.settings import SlackSettings
    from bots.slack.turns import SlackWing
    from bots.teams.bot import TeamsBot
    from bots.teams.settings import TeamsSettings
    from bots.teams.turns import TeamsWing

    for bot in (SlackBot, TeamsBot):
        parameters = list(inspect.signature(bot).parameters)
        assert parameters[:3] == ["agent", "settings", "state"], bot
        assert {"metrics", "files"} <= set(parameters), bot
        source = inspect.getsource(bot)
        assert all(f"self.{name}" in source or f"def {name}" in source for name in BOT_LIFECYCLE)
    for wing in (SlackWing, TeamsWing):
        routes = {"question", "resumed", "step", "scheduled", "removed"}
        assert {"kinds", "platform", *routes} <= set(dir(wing)), wing
    assert issubclass(SlackSettings, ChannelSettings) and issubclass(TeamsSettings, ChannelSettings)
