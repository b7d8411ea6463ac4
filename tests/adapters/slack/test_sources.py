"""The sources line and "Show query" in Block Kit (issue 13, item 3): any table names and any
SQL stay within Slack's limits and validate with slack_sdk; the SQL never rides in a
message everyone sees."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.controls import MAX_CITED_TABLES_CHARS, sources_block, sources_line
from adapters.slack.limits import MAX_BLOCKS, MAX_SECTION_TEXT
from adapters.slack.render import MAX_QUERY_CHARS, query_messages, render
from adapters.slack.stream import SlackReplyStream
from adapters.slack.testing import FakeSlackApi
from agent_core.components import Source, SourcesComponent, UiComponent

names = st.text(min_size=1, max_size=300)


def cited(tables: list[str], query: str = "SELECT 1", count: int = 1) -> SourcesComponent:
    return SourcesComponent(
        sources=[Source(tool="run_sql", query=query, tables=tables, rows=n) for n in range(count)]
    )


@settings(max_examples=60, deadline=None)
@given(tables=st.lists(names, max_size=80), count=st.integers(1, 30))
def test_any_tables_make_a_valid_line_within_limits(tables: list[str], count: int) -> None:
    block = sources_block(cited(tables, count=count), "turn-1")
    assert Block.parse(block).to_dict() == block
    text = block["text"]["text"]
    assert len(text) <= MAX_SECTION_TEXT
    assert len(text) <= MAX_CITED_TABLES_CHARS + 200  # compact, however many tables


def test_many_tables_end_with_how_many_more() -> None:
    line = sources_line(cited([f"table_{n:03d}" for n in range(200)]))
    assert line.startswith(":bar_chart: Sources: `table_000`, `table_001`")
    assert " more · 1 query · 0 rows" in line


@settings(max_examples=40, deadline=None)
@given(sql=st.text(min_size=1, max_size=20_000), count=st.integers(1, 60))
def test_any_query_shows_within_slacks_limits(sql: str, count: int) -> None:
    """A citation longer than Slack allows: each query is cut (with a note) to what a
    section holds, and many queries spread over messages of at most 50 blocks."""
    messages = query_messages(cited(["t"], sql, count).sources)
    blocks = [b for m in messages for b in m.blocks]
    assert len(blocks) >= count
    for message in messages:
        assert len(message.blocks) <= MAX_BLOCKS
        for block in message.blocks:
            assert Block.parse(block).to_dict() == block
            assert len(block["text"]["text"]) <= MAX_SECTION_TEXT


def test_a_long_query_is_cut_with_a_note() -> None:
    [message] = query_messages(cited(["t"], "SELECT " + "x, " * 5000 + "1").sources)
    text = message.blocks[0]["text"]["text"]
    assert "-- (cut: the query is longer)" in text and len(text) < MAX_QUERY_CHARS + 100


async def test_sources_without_an_answer_text_are_posted_on_their_own() -> None:
    """A turn that ends without text (a tool-only answer) still cites its tables, and the
    line never carries the SQL."""
    async with FakeSlackApi() as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
        target = ReplyTarget("C1", "1.0", "T1", "U1", turn_id="t-9")
        async with SlackReplyStream(client, target) as reply:
            await reply.handle(UiComponent(rich_component=cited(["orders"], "SELECT secret")))
            await reply.finish()
        [post] = slack.calls_to("chat.postMessage")
        block = post.args["blocks"][0]
        assert "`orders`" in block["text"]["text"] and block["accessory"]["value"] == "t-9"
        assert "secret" not in json.dumps([c.args for c in slack.calls])


def test_the_renderer_alone_shows_the_line_without_a_button() -> None:
    [message] = render(UiComponent(rich_component=cited(["orders"], "SELECT secret")))
    assert "accessory" not in message.blocks[0] and "secret" not in json.dumps(message.blocks)
