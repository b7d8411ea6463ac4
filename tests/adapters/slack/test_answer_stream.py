"""AnswerStream: batched streaming, fallbacks and long answers, against the fake Slack API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.answer import AnswerStream
from adapters.slack.controls import feedback_block
from adapters.slack.errors import SlackCallFailed
from adapters.slack.testing import FakeSlackApi, Reply

FEEDBACK = [feedback_block()]


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


def stream(fake: FakeSlackApi, **options: float) -> AnswerStream:
    client = AsyncWebClient(
        token="xoxb-1",
        base_url=fake.base_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
    )
    return AnswerStream(
        client, channel="C1", thread_ts="1.0", team_id="T1", user_id="U1", **options
    )


def words(total: int) -> list[str]:
    text = ("lorem ipsum dolor sit amet " * (total // 27 + 1))[:total]
    return [text[i : i + 12] for i in range(0, total, 12)]


async def test_3000_char_answer_takes_at_most_4_calls(fake: FakeSlackApi) -> None:
    answer = stream(fake)
    for delta in words(3000):
        await answer.append(delta)
    ts = await answer.finish(FEEDBACK)
    assert fake.methods() == ["chat.startStream", "chat.appendStream", "chat.stopStream"]
    [message] = fake.visible("C1")
    assert (message.ts, len(message.text), message.blocks) == (ts, 3000, FEEDBACK)
    start = fake.calls_to("chat.startStream")[0].args
    assert (start["recipient_team_id"], start["recipient_user_id"]) == ("T1", "U1")
    assert start["thread_ts"] == "1.0"


async def test_short_answer_is_one_post_with_feedback(fake: FakeSlackApi) -> None:
    answer = stream(fake)
    await answer.append("Hello **there**")
    await answer.finish(FEEDBACK)
    assert fake.methods() == ["chat.postMessage"]
    args = fake.calls_to("chat.postMessage")[0].args
    assert args["blocks"] == [{"type": "markdown", "text": "Hello **there**"}, *FEEDBACK]
    assert args["thread_ts"] == "1.0" and args["text"] == "Hello **there**"


async def test_empty_answer_posts_nothing(fake: FakeSlackApi) -> None:
    assert await stream(fake).finish(FEEDBACK) is None
    assert fake.calls == []


async def test_unsent_text_taken_back_costs_no_call(fake: FakeSlackApi) -> None:
    answer = stream(fake)
    await answer.append("Let me check that.")
    await answer.discard()
    assert fake.calls == []


async def test_sent_text_taken_back_is_stopped_and_deleted(fake: FakeSlackApi) -> None:
    answer = stream(fake, flush_chars=5)
    await answer.append("Let me check that.")
    await answer.discard()
    assert fake.methods() == ["chat.startStream", "chat.stopStream", "chat.delete"]
    assert fake.visible("C1") == []


async def test_slow_text_is_flushed_after_the_interval(fake: FakeSlackApi) -> None:
    answer = stream(fake, flush_interval=0.01)
    await answer.append("Thinking out loud")
    await fake.wait_for_call("chat.startStream")
    await answer.finish(FEEDBACK)
    assert fake.methods() == ["chat.startStream", "chat.stopStream"]
    assert fake.visible("C1")[0].text == "Thinking out loud"


async def test_stream_that_left_streaming_state_continues_with_chat_update(
    fake: FakeSlackApi,
) -> None:
    fake.script("chat.appendStream", Reply(error="message_not_in_streaming_state"))
    answer = stream(fake, flush_chars=100)
    for delta in words(450):
        await answer.append(delta)
    await answer.finish(FEEDBACK)
    assert fake.methods() == [
        "chat.startStream",
        "chat.appendStream",
        "chat.update",
        "chat.update",
        "chat.update",
        "chat.update",
    ]
    [message] = fake.visible("C1")
    assert message.blocks[0]["text"] == "".join(words(450))
    assert message.blocks[-1] == FEEDBACK[0]


async def test_workspace_without_streaming_posts_then_updates(fake: FakeSlackApi) -> None:
    fake.errors["chat.startStream"] = "unknown_method"
    answer = stream(fake, flush_chars=1000)
    for delta in words(2500):
        await answer.append(delta)
    await answer.finish(FEEDBACK)
    assert fake.methods() == ["chat.startStream", "chat.postMessage", "chat.update", "chat.update"]
    [message] = fake.visible("C1")
    assert len(message.blocks[0]["text"]) == 2500 and message.blocks[1] == FEEDBACK[0]


async def test_long_answer_rolls_over_to_new_messages_within_limits(fake: FakeSlackApi) -> None:
    answer = stream(fake, flush_chars=2000)
    text = "".join(words(30_000))
    for delta in words(30_000):
        await answer.append(delta)
    await answer.finish(FEEDBACK)
    messages = fake.visible("C1")
    assert len(messages) == 3
    assert all(len(m.text) <= answer.max_message_chars for m in messages)
    assert "".join(m.text for m in messages) == text
    assert [m.blocks for m in messages] == [[], [], FEEDBACK]
    assert all(not m.streaming for m in messages)
    for call in fake.calls_to("chat.appendStream") + fake.calls_to("chat.startStream"):
        assert sum(len(c.get("text", "")) for c in call.args.get("chunks", [])) <= 12_000


async def test_rate_limited_append_is_retried_after_retry_after(fake: FakeSlackApi) -> None:
    fake.script("chat.appendStream", Reply(status=429, retry_after=0))
    answer = stream(fake, flush_chars=100)
    for delta in words(300):
        await answer.append(delta)
    await answer.finish(FEEDBACK)
    assert fake.visible("C1")[0].text == "".join(words(300))
    assert fake.methods().count("chat.appendStream") == 2


async def test_other_errors_are_not_swallowed(fake: FakeSlackApi) -> None:
    fake.errors["chat.startStream"] = "channel_not_found"
    answer = stream(fake, flush_chars=5)
    with pytest.raises(SlackCallFailed, match="channel_not_found"):  # read once, at the client
        await answer.append("hello there")
