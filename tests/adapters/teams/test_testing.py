"""The shipped fake Bot Connector (``adapters.teams.testing``) mounted in another app, as the
console mounts it: the real outbound client reaches it at the prefix, and ``on_call`` sees
every answered call."""

from __future__ import annotations

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from adapters.teams.testing import ConnectorCall, FakeBotConnector
from bots.teams.connector import BotConnectorClient


async def test_mounted_the_service_url_is_the_prefix_and_on_call_sees_answers() -> None:
    seen: list[ConnectorCall] = []
    fake = FakeBotConnector(on_call=seen.append)
    app = web.Application()
    app.add_subapp("/teams", fake.web_app())
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as http:
        service_url = str(server.make_url("/teams/"))
        client = BotConnectorClient(http, service_url)
        personal = await client.create_conversation({"members": [{"id": "29:ana"}]})
        sent = await client.send(personal, {"type": "message", "text": "hi"})
        async with http.get(server.make_url("/teams/openid/.well-known/openidconfiguration")) as r:
            metadata = await r.json()
        keys_url = str(server.make_url("/teams/openid/keys"))
    assert fake.conversations == {personal: {"members": [{"id": "29:ana"}]}}
    assert [(c.operation, c.status) for c in seen] == [
        ("create_conversation", 201),
        ("send_to_conversation", 201),
    ]
    assert seen[0].response["id"] == personal and seen[1].response == {"id": sent}
    assert metadata["jwks_uri"] == keys_url


async def test_keep_bounds_the_calls_a_long_running_fake_remembers() -> None:
    async with FakeBotConnector(keep=2) as fake, aiohttp.ClientSession() as http:
        client = BotConnectorClient(http, fake.url)
        for n in range(4):
            await client.send("a:1", {"type": "message", "text": str(n)})
    assert [call.text for call in fake.calls] == ["2", "3"]
