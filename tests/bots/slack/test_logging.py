"""The Slack bot leaves Threadline's loggers alone."""

from __future__ import annotations

import logging

from agent_core import StaticUserResolver, User
from bots.slack.bot import SlackBot
from bots.slack.settings import SlackSettings
from tests.bots.slack.agents import build_agent


def test_building_the_bot_does_not_silence_threadlines_info_logs() -> None:
    """Regression: bolt names its logger after the app and sets its level; the app was named
    "threadline", so every ``threadline.*`` INFO line (the agent kept its own store, the
    database check) vanished in ``threadline slack``."""
    before = logging.getLogger("threadline").level
    agent = build_agent([], StaticUserResolver(User(id="u")))
    SlackBot(agent, SlackSettings(bot_token="xoxb-1", signing_secret="s"))
    assert logging.getLogger("threadline").level == before == logging.NOTSET
