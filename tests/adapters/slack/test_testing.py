"""The fake Slack Web API answers the real slack_sdk client like Slack does."""

from __future__ import annotations

import time

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.testing import NON_MARKETPLACE, Call, FakeSlackApi, Reply


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


async def test_on_call_sees_each_answered_call_and_the_message_it_changed() -> None:
    seen: list[tuple[str, bool, str | None]] = []

    def observe(call: Call) -> None:
        assert call.response is not None
        text = call.message.text if call.message is not None else None
        seen.append((call.method, call.response["ok"], text))

    async with FakeSlackApi(on_call=observe) as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        posted = await client.chat_postMessage(channel="C1", text="one")
        await client.chat_update(channel="C1", ts=posted["ts"], text="two")
        with pytest.raises(SlackApiError):
            await client.chat_update(channel="C1", ts="9.9", text="lost")
    assert seen == [
        ("chat.postMessage", True, "one"),
        ("chat.update", True, "two"),
        ("chat.update", False, None),
    ]


async def test_only_the_listed_tokens_are_valid_when_tokens_are_set() -> None:
    async with FakeSlackApi() as fake:
        fake.tokens = {"xoxb-current"}
        current = AsyncWebClient(token="xoxb-current", base_url=fake.base_url)
        revoked = AsyncWebClient(token="xoxb-revoked", base_url=fake.base_url)
        assert (await current.auth_test())["ok"]
        with pytest.raises(SlackApiError) as refused:
            await revoked.auth_test()
        assert refused.value.response["error"] == "invalid_auth"


async def test_mounted_in_another_app_it_hands_out_urls_under_its_prefix() -> None:
    fake = FakeSlackApi()
    app = web.Application()
    app.add_subapp("/slack", fake.web_app())
    async with TestServer(app, host="127.0.0.1") as server:
        base = str(server.make_url("/slack/api/"))
        client = AsyncWebClient(token="xoxb-1", base_url=base)
        await client.files_upload_v2(
            channel="C1", thread_ts="1.0", filename="chart.png", content=b"\x89PNG", title="A"
        )
        [message] = fake.visible("C1")
        [shared] = message.files
        assert (shared["name"], shared["title"], shared["mimetype"]) == (
            "chart.png",
            "A",
            "image/png",
        )
        assert shared["url_private"] == str(server.make_url("/slack/files/F1/chart.png"))
        async with aiohttp.ClientSession() as session, session.get(shared["url_private"]) as got:
            assert (got.content_type, await got.read()) == ("image/png", b"\x89PNG")
        connection = await AsyncWebClient(token="xapp-1", base_url=base).apps_connections_open(
            app_token="xapp-1"
        )
        assert connection["url"] == str(server.make_url("/slack/socket")).replace("http", "ws")


async def test_keep_bounds_what_a_long_running_fake_remembers() -> None:
    async with FakeSlackApi(keep=3) as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        for n in range(5):
            await client.chat_postMessage(channel="C1", text=str(n))
        assert [m.text for m in fake.messages] == ["2", "3", "4"]
        assert len(fake.calls) == 3


async def test_non_marketplace_limits_answer_429_with_retry_after_and_fifteen_messages() -> None:
    """The fake enforces Slack's 2025 limits on apps outside the Marketplace: one read a
    minute per method and workspace, at most 15 messages a read, 429 with Retry-After."""
    now = [1000.0]
    async with FakeSlackApi(limits=NON_MARKETPLACE, clock=lambda: now[0]) as fake:
        fake.replies[("C1", "1.0")] = [{"ts": f"{n}.0", "text": f"m{n}"} for n in range(1, 41)]
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        first = await client.conversations_replies(channel="C1", ts="1.0", limit=200)
        assert len(first["messages"]) == 15 and first["has_more"] is True
        with pytest.raises(SlackApiError) as refused:
            await client.conversations_replies(channel="C1", ts="1.0")
        assert refused.value.response.status_code == 429
        assert refused.value.response.headers["Retry-After"] == "60"
        await client.conversations_history(channel="C1")  # another method: its own minute
        other = AsyncWebClient(token="xoxb-other-workspace", base_url=fake.base_url)
        await other.conversations_replies(channel="C1", ts="1.0")  # another workspace
        now[0] += 45
        with pytest.raises(SlackApiError) as later:
            await client.conversations_replies(channel="C1", ts="1.0")
        assert later.value.response.headers["Retry-After"] == "15"
        now[0] += 15
        await client.conversations_replies(channel="C1", ts="1.0")
        assert [c.args.get("ts") for c in fake.rate_limited] == ["1.0", "1.0"]
        await client.chat_postMessage(channel="C1", text="posting is not limited")
        await client.chat_postMessage(channel="C1", text="at all")
