"""Reaching a person and a place in Slack, through the real ``slack_sdk`` client and the
shipped fake Web API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.reach import person, place_gone
from adapters.slack.testing import FakeSlackApi, Reply


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "name": "ana", "tz": "Europe/Paris"}
        fake.users["U2"] = {"id": "U2", "name": "ben", "deleted": True, "tz": "America/New_York"}
        yield fake


def client(fake: FakeSlackApi) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-1", base_url=fake.base_url)


async def test_active_deactivated_and_unknown_people(fake: FakeSlackApi) -> None:
    ana = await person(client(fake), "U1")
    assert (ana.standing, ana.timezone, ana.name) == ("active", "Europe/Paris", "ana")
    ben = await person(client(fake), "U2")
    assert (ben.standing, ben.reason) == ("gone", "was deactivated")
    nobody = await person(client(fake), "U404")
    assert (nobody.standing, nobody.reason) == ("gone", "is no longer in the workspace")


async def test_an_outage_is_never_taken_for_a_departure(fake: FakeSlackApi) -> None:
    fake.errors["users.info"] = Reply.page(503)
    assert (await person(client(fake), "U1")).standing == "unknown"
    fake.errors["users.info"] = "missing_scope"
    assert (await person(client(fake), "U1")).standing == "unknown"


@pytest.mark.parametrize(
    ("reply", "gone"),
    [
        (Reply(error="not_in_channel"), "I am no longer in that channel (not_in_channel)"),
        (Reply(error="channel_not_found"), "the channel is gone (channel_not_found)"),
        (Reply(error="is_archived"), "the channel is archived (is_archived)"),
        (Reply(status=429, retry_after=1), None),
        (Reply.page(503), None),
        (Reply(error="msg_too_long"), None),
    ],
)
async def test_a_refused_post_says_whether_the_place_is_gone(
    fake: FakeSlackApi, reply: Reply, gone: str | None
) -> None:
    fake.script("chat.postMessage", reply)
    sdk = AsyncWebClient(token="xoxb-1", base_url=fake.base_url, retry_handlers=[])
    with pytest.raises(SlackApiError) as refused:
        await sdk.chat_postMessage(channel="C1", text="the scheduled answer")
    assert place_gone(refused.value) == gone
    assert place_gone(ValueError("not Slack")) is None
