"""Socket Mode end to end: the real slack_sdk SocketModeClient over a loopback WebSocket."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.identity import SlackUserResolver
from adapters.slack.testing import FakeSlackApi
from bots.slack.app import build_web_app, socket_mode_handler
from bots.slack.bot import SlackBot
from bots.slack.settings import SlackSettings
from tests.bots.slack.agents import build_agent
from tests.bots.slack.harness import TOKEN, add_users


@pytest.fixture
async def socket_bot(tmp_path: Path) -> AsyncIterator[tuple[FakeSlackApi, SlackBot]]:
    async with FakeSlackApi() as fake:
        add_users(fake)
        settings = SlackSettings(
            bot_token=TOKEN,
            app_token="xapp-1",
            mode="socket",
            api_url=fake.base_url,
            data_dir=tmp_path,
            stream_interval=0,
        )
        resolver = SlackUserResolver(AsyncWebClient(token=TOKEN, base_url=fake.base_url))
        bot = SlackBot(build_agent(["Over the socket", "Private"], resolver), settings)
        await bot.open()
        handler = socket_mode_handler(bot)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        try:
            yield fake, bot
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]
            await handler.client.aiohttp_client_session.close()
            await bot.close(timeout=0)


async def test_events_and_commands_over_socket_mode_are_acked_and_answered(
    socket_bot: tuple[FakeSlackApi, SlackBot],
) -> None:
    fake, bot = socket_bot
    assert fake.calls_to("apps.connections.open")[0].token == "xapp-1"
    await fake.wait_for(lambda f: bool(f._sockets))
    event = {
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": "EvS1",
        "event_time": int(time.time()),
        "event": {
            "type": "app_mention",
            "user": "U1",
            "text": "<@UBOT> hi",
            "ts": "500.0",
            "channel": "C1",
        },
    }
    await fake.send_envelope("events_api", event, envelope_id="env-1")
    [ack] = await fake.wait_for_call("socket_ack")
    assert ack.args == {"envelope_id": "env-1"}
    await bot.idle()
    post = fake.calls_to("chat.postMessage")[0].args
    assert (post["thread_ts"], post["blocks"][0]["text"]) == ("500.0", "Over the socket")

    command = {
        "team_id": "T1",
        "channel_id": "C1",
        "user_id": "U1",
        "user_name": "ana",
        "command": "/ask",
        "text": "private secret?",
        "response_url": fake.response_url(),
    }
    await fake.send_envelope("slash_commands", command, envelope_id="env-2")
    acks = await fake.wait_for_call("socket_ack", 2)
    assert acks[1].args["envelope_id"] == "env-2"
    assert acks[1].args["payload"]["response_type"] == "ephemeral"
    await bot.idle()
    assert fake.calls_to("chat.postEphemeral")[0].args["user"] == "U1"


async def test_socket_mode_never_exposes_the_unsigned_events_endpoint(
    socket_bot: tuple[FakeSlackApi, SlackBot],
) -> None:
    """Regression guard: bolt skips signature checks in Socket Mode, so HTTP must not route."""
    _, bot = socket_bot
    app = build_web_app(bot)
    paths = {r.resource.canonical for r in app.router.routes() if r.resource is not None}
    assert "/slack/events" not in paths and "/healthz" in paths
