"""Multi-workspace installs (installations in the bot's state), uninstall, and the HTTP
server's pages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.testing import FakeSlackApi
from agent_core.state_factory import StateSettings, build_state
from bots.slack.app import build_web_app
from bots.slack.bot import SlackBot
from bots.slack.clients import build_user_resolver, default_clients
from bots.slack.settings import SlackSettings
from tests.bots.slack.agents import build_agent
from tests.bots.slack.harness import SECRET, SlackHarness, add_users, running_bot
from tests.bots.slack.test_bot_entry_points import mention


async def test_each_workspace_is_answered_with_its_own_installed_token(tmp_path: Path) -> None:
    async with FakeSlackApi(team_id="T2") as fake:
        add_users(fake)
        settings = SlackSettings(
            client_id="111.222",
            client_secret="shh",
            signing_secret=SECRET,
            api_url=fake.base_url,
            data_dir=tmp_path,
            stream_interval=0,
        )
        state = build_state(StateSettings(ephemeral=True))
        clients = default_clients(settings, state)
        store = clients.installation_store
        assert store is not None
        await store.async_save(
            Installation(
                app_id="A1",
                team_id="T2",
                bot_token="xoxb-team2",
                bot_id="B2",
                bot_user_id="UBOT",
                bot_scopes=["chat:write"],
                user_id="U1",
            )
        )
        resolver = build_user_resolver(settings, clients, state.cache)
        agent = build_agent(["Hello T2", "again", "and again"], resolver)
        bot = SlackBot(agent, settings, state=state, clients=clients)
        await bot.open()
        async with TestClient(TestServer(build_web_app(bot))) as http:
            h = SlackHarness(fake, bot, http)
            await h.event(mention(), team="T2")
            await h.idle()
            [post] = fake.calls_to("chat.postMessage")
            assert post.token == "xoxb-team2"
            assert {c.token for c in fake.calls_to("users.info")} == {"xoxb-team2"}
            await h.event(mention(ts="100.500100"), team="T2")
            await h.idle()
            assert len(fake.calls_to("chat.postMessage")) == 2
            assert len(fake.calls_to("auth.test")) == 1  # bolt's authorize cache: not per event

            await h.event(mention(ts="600.0"), team="T3")  # never installed
            await h.idle()
            assert len(fake.calls_to("chat.postMessage")) == 2

            install = await http.get("/slack/install", allow_redirects=False)
            assert install.status in (200, 302)
            assert "111.222" in (await install.text() + install.headers.get("Location", ""))

            await h.event({"type": "app_uninstalled"}, team="T2")
            assert await store.async_find_bot(enterprise_id=None, team_id="T2") is None
            await h.event(mention(ts="601.0"), team="T2")
            await h.idle()
            assert len(fake.calls_to("chat.postMessage")) == 2
        await bot.close(timeout=0)


async def test_healthz_and_prometheus_metrics(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["hi"]) as h:
        await h.event(mention())
        await h.idle()
        health = await h.http.get("/healthz")
        assert health.status == 200
        assert json.loads(await health.text()) == {
            "ok": True,
            "state": {"ok": True, "backend": "memory", "detail": "ok", "latency_ms": None},
            "running_turns": 0,
            "queued_turns": 0,
            "process": os.getpid(),
        }
        metrics = await (await h.http.get("/metrics")).text()
        assert 'threadline_slack_events_total{kind="app_mention"} 1.0' in metrics
        assert 'threadline_slack_turns_total{outcome="completed"} 1.0' in metrics
        assert "threadline_slack_turn_seconds_count 1.0" in metrics


def test_settings_refuse_incomplete_configuration(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SLACK_BOT_TOKEN"):
        SlackSettings.from_env({"SLACK_SIGNING_SECRET": "s"})
    with pytest.raises(ValueError, match="SLACK_SIGNING_SECRET"):
        SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1"})
    socket = SlackSettings.from_env(
        {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_APP_TOKEN": "xapp-1",
            "SLACK_COMMAND": "data",
            "PORT": "8080",
        }
    )
    assert (socket.mode, socket.command, socket.port) == ("socket", "/data", 8080)
    assert "xapp-1" not in repr(socket) and "xoxb-1" not in str(socket.model_dump())


def test_cli_reports_missing_configuration(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bots.cli import main

    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_CLIENT_ID",
        "SLACK_CLIENT_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path))
    assert main(["slack", "--scripted"]) == 2
    assert "SLACK_BOT_TOKEN" in capsys.readouterr().err
