"""Markup from a model or from data reaches Slack inert (issue 22, item 7).

The real ``slack_sdk`` client sends through the real reply stream, renderer, answer stream,
private delivery and App Home to the fake Slack Web API; the checks run on what the fake
received (``tests.adapters.inert``).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.escape import escape, link
from adapters.slack.home import post_welcome
from adapters.slack.markdown import to_mrkdwn
from adapters.slack.stream import SlackReplyStream
from adapters.slack.testing import Call, FakeSlackApi
from agent_core.users import RequestContext
from tests.adapters.inert import (
    MARKDOWN_LINK,
    SLACK_MARKUP,
    components,
    hostile,
    slack_problems,
    streamed,
)

ATTACK = "<!channel> <@U0123> <https://evil.example|click here>"


async def shown(text: str, cuts: list[int]) -> list[Call]:
    """Everything the fake Slack received for one turn showing ``text`` everywhere, in a
    channel thread (private parts go as ephemeral messages) and in the App Home."""
    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        target = ReplyTarget("C1", "1.0", "T1", "U1")
        async with SlackReplyStream(
            client, target, flush_chars=1, flush_interval=0, update_interval=0
        ) as reply:
            for component in [*streamed(text, cuts), *components(text)]:
                await reply.handle(component)
            await reply.finish()
        home = RequestContext(metadata={"channel_id": "D1"})
        await post_welcome(client, home, components(text)[0])
        return list(fake.calls)


def streamed_messages(calls: list[Call]) -> dict[str, str]:
    """The markdown each streamed message holds once all its appends are in."""
    held: dict[str, str] = defaultdict(str)
    for call in calls:
        if call.method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            ts = str(call.args.get("ts") or (call.response or {}).get("ts"))
            held[ts] += call.args.get("markdown_text") or ""
            for chunk in call.args.get("chunks") or []:
                held[ts] += chunk.get("text", "") if chunk.get("type") == "markdown_text" else ""
    return held


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_no_text_from_a_model_or_data_reaches_slack_as_markup(text: str, cuts: list[int]) -> None:
    calls = asyncio.run(shown(text, cuts))
    private = {"chat.postEphemeral"} if text.strip() else set()  # empty text: nothing private
    assert {c.method for c in calls} >= {"chat.postMessage", *private}
    problems = [p for call in calls for p in slack_problems(call.args)]
    assert problems == []
    for whole in streamed_messages(calls).values():  # nor across a stream's appends
        assert not MARKDOWN_LINK.search(whole) and not SLACK_MARKUP.search(whole)


def test_the_reported_attack_arrives_inert() -> None:
    """Regression: an answer repeating a database value ``<!channel> <@U0123>
    <https://evil.example|click here>`` was sent unescaped in ``chat.postMessage``'s
    top-level ``text`` and in markdown blocks."""
    calls = asyncio.run(shown(ATTACK, [10, 30]))
    sent = [field for call in calls for field in slack_problems(call.args)]
    assert sent == []
    texts = [c.args["text"] for c in calls if c.method == "chat.postMessage"]
    assert any(
        "&lt;!channel&gt; &lt;@U0123&gt; &lt;https://evil.example|click here&gt;" in t
        for t in texts
    )


@given(hostile)
def test_escape_leaves_no_markup(text: str) -> None:
    for safe in (escape(text), to_mrkdwn(text)):
        assert not SLACK_MARKUP.search(safe) and not MARKDOWN_LINK.search(safe)


@given(hostile, hostile)
def test_escaping_in_pieces_is_escaping_the_whole(first: str, second: str) -> None:
    assert escape(first) + escape(second, after=first) == escape(first + second)


@given(st.text().filter(lambda url: not any(c.isspace() for c in url)), hostile)
def test_a_link_we_make_keeps_its_label_inert_and_cannot_be_ended_early(
    url: str, label: str
) -> None:
    made = link("https://example.com/" + url, label)
    assert made.startswith("<https://example.com/") and made.endswith(">")
    target, shown = made[1:-1].split("|", 1)
    assert not set("<>|") & set(target)
    assert not SLACK_MARKUP.search(shown) and not MARKDOWN_LINK.search(shown)
