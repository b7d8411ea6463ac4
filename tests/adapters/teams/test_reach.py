"""Reaching a person and a place in Teams, through the real Bot Connector client and the
shipped fake connector."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from adapters.teams.connector import ConnectorError
from adapters.teams.reach import person, place_gone
from adapters.teams.testing import FakeBotConnector
from bots.teams.connector import BotConnectorClient


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as fake:
        fake.members["aad-ana"] = {"id": "29:ana", "name": "Ana", "aadObjectId": "aad-ana"}
        yield fake


async def test_a_member_and_one_who_left(fake: FakeBotConnector) -> None:
    async with aiohttp.ClientSession() as session:
        connector = BotConnectorClient(session, fake.url)
        ana = await person(connector, "a:1", "aad-ana")
        assert (ana.standing, ana.name) == ("active", "Ana")
        left = await person(connector, "a:1", "aad-ben")
        assert (left.standing, left.reason) == ("gone", "is no longer in the conversation")
        fake.fail("get_conversation_member", 503)
        assert (await person(connector, "a:1", "aad-ana")).standing == "unknown"


@pytest.mark.parametrize(
    ("status", "code", "gone"),
    [
        (403, "BotNotInConversationRoster", "I was removed from the conversation"),
        (403, "ConversationBlockedByUser", "the owner blocked the bot"),
        (404, "ConversationNotFound", "the conversation is gone"),
        (429, "TooManyRequests", None),
        (502, "BadGateway", None),
    ],
)
async def test_a_refused_proactive_post_says_whether_the_place_is_gone(
    fake: FakeBotConnector, status: int, code: str, gone: str | None
) -> None:
    fake.fail("send_to_conversation", status, code=code)
    async with aiohttp.ClientSession() as session:
        connector = BotConnectorClient(session, fake.url)
        with pytest.raises(ConnectorError) as refused:
            await connector.send("a:1", {"type": "message", "text": "the scheduled answer"})
    found = place_gone(refused.value)
    assert found == gone if gone is None else found is not None and found.startswith(gone)
