"""The fake Slack Web API answers the real slack_sdk client like Slack does."""

from __future__ import annotations

import time

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import FakeSlackApi, Reply


async def test_post_update_delete_and_ts_generation() -> None:
    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        first = await client.chat_postMessage(channel="C1", text="one")
        second = await client.chat_postMessage(channel="C1", text="two", thread_ts=first["ts"])
        assert float(second["ts"]) > float(first["ts"])
        await client.chat_update(channel="C1", ts=second["ts"], text="two!")
        assert [m.text for m in fake.thread("C1", first["ts"])] == ["one", "two!"]
        await client.chat_delete(channel="C1", ts=second["ts"])
        assert [m.text for m in fake.visible("C1")] == ["one"]
        with pytest.raises(SlackApiError) as failed, pytest.warns(UserWarning):
            await client.chat_postMessage(channel="C1", text="")
        assert failed.value.response["error"] == "no_text"


async def test_bad_token_is_not_authed() -> None:
    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="nope", base_url=fake.base_url)
        with pytest.raises(SlackApiError):
            await client.auth_test()


async def test_streaming_and_the_not_in_streaming_state_error() -> None:
    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        stream = await client.chat_startStream(channel="C1", thread_ts="1.0", markdown_text="a")
        await client.chat_appendStream(channel="C1", ts=stream["ts"], markdown_text="b")
        await client.chat_stopStream(channel="C1", ts=stream["ts"], markdown_text="c")
        [message] = fake.visible("C1")
        assert (message.text, message.streaming) == ("abc", False)
        with pytest.raises(SlackApiError) as failed:
            await client.chat_appendStream(channel="C1", ts=stream["ts"], markdown_text="d")
        assert failed.value.response["error"] == "message_not_in_streaming_state"


async def test_scripted_429_is_retried_by_the_sdk_rate_limit_handler() -> None:
    async with FakeSlackApi() as fake:
        fake.script("chat.postMessage", Reply(status=429, retry_after=0))
        client = AsyncWebClient(
            token="xoxb-1",
            base_url=fake.base_url,
            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
        )
        started = time.monotonic()
        response = await client.chat_postMessage(channel="C1", text="hi")
        assert response["ok"] and time.monotonic() - started < 2
        assert len(fake.calls_to("chat.postMessage")) == 2


async def test_files_upload_v2_runs_the_three_step_flow() -> None:
    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        await client.files_upload_v2(
            channel="C1", thread_ts="1.0", filename="a.csv", content=b"x,y\n", title="a"
        )
        assert fake.methods() == [
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
        ]
        assert fake.uploads == {"F1": b"x,y\n"}


async def test_users_groups_and_replies() -> None:
    async with FakeSlackApi() as fake:
        fake.users["U1"] = {"id": "U1", "profile": {"email": "a@x.io"}}
        fake.usergroups = [{"id": "S1", "handle": "data", "users": ["U1"]}]
        fake.replies[("C1", "1.0")] = [{"ts": "1.0", "user": "U2", "text": "root"}]
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        assert (await client.users_info(user="U1"))["user"]["id"] == "U1"
        assert "users" not in (await client.usergroups_list())["usergroups"][0]
        assert (await client.usergroups_users_list(usergroup="S1"))["users"] == ["U1"]
        replies = await client.conversations_replies(channel="C1", ts="1.0")
        assert replies["messages"][0]["text"] == "root"
        fake.errors["usergroups.list"] = "missing_scope"
        with pytest.raises(SlackApiError):
            await client.usergroups_list()
