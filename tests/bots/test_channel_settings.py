"""The channels' settings share their names (issue 23: ``turn_concurrency``,
``stream_interval``); the names a channel used before are still read, each with a
deprecation line in the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.settings import load_sections
from bots.slack.settings import SlackSettings
from bots.teams.settings import TeamsSettings

SLACK = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}


def test_both_channels_have_the_same_names_and_defaults() -> None:
    slack = SlackSettings.from_env(SLACK)
    teams = TeamsSettings.from_env({})
    for name in ("turn_concurrency", "turns_per_person", "stream_interval", "dedupe_ttl"):
        assert getattr(slack, name) == getattr(teams, name), name
    assert (slack.turn_concurrency, slack.stream_interval) == (64, 1.0)


def test_slacks_old_flush_interval_sets_stream_interval_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    toml = tmp_path / "threadline.toml"
    toml.write_text("[slack]\nflush_interval = 0.3\n", encoding="utf-8")
    loaded = load_sections([SlackSettings], file=toml, overrides={SlackSettings: SLACK})
    assert loaded.section(SlackSettings).stream_interval == 0.3
    assert "flush_interval is deprecated: it sets [slack] stream_interval" in caplog.text


@pytest.mark.parametrize(
    ("environ", "name", "value"),
    [
        ({"TEAMS_CONCURRENCY": "8"}, "turn_concurrency", 8),
        ({"TEAMS_STREAM_INTERVAL": "0.5"}, "stream_interval", 0.5),
    ],
)
def test_teams_old_names_set_the_shared_ones_and_say_so(
    environ: dict[str, str], name: str, value: float, caplog: pytest.LogCaptureFixture
) -> None:
    assert getattr(TeamsSettings.from_env(environ), name) == value
    old = next(iter(environ))
    assert f"{old} is deprecated: it sets [teams] {name}" in caplog.text


def test_the_new_name_wins_over_the_old_one() -> None:
    settings = TeamsSettings.from_env(
        {"TEAMS_CONCURRENCY": "8", "THREADLINE_TURN_CONCURRENCY": "4"}
    )
    assert settings.turn_concurrency == 4
