"""Markdown from a model or from data never becomes a link in Teams (issue 22, item 8).

The real HTTP connector client sends through the real reply stream (streamed answer in a
personal chat, cards, a group chat's private detail) to the fake Bot Connector; the checks
run on the activities it received (``tests.adapters.inert``), and every card is checked
against the Adaptive Card 1.5 schema.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.teams.activities import ConversationRef
from adapters.teams.elements import fact_set, table, text_block
from adapters.teams.escape import escape_card, escape_message
from adapters.teams.payloads import Activity
from adapters.teams.render import render
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from adapters.teams.testing import FakeBotConnector
from agent_core.components import DataFrameComponent, UiComponent
from bots.teams.connector import ConnectorPool
from tests.adapters.inert import (
    MARKDOWN_LINK,
    TEAMS_HTML,
    components,
    hostile,
    streamed,
    teams_problems,
)
from tests.adapters.teams.payloads import message
from tests.adapters.teams.schemas import assert_valid_card, cards_in

RESET = "[Reset your password](https://evil.example/reset)"
FAST = ReplyOptions(pace=0.0, typing_interval=60)


async def sent(text: str, cuts: list[int], kind: str) -> list[Any]:
    """Every activity the fake connector received for one turn showing ``text`` everywhere
    (``kind``: a personal chat streams; a group chat sends admin detail privately)."""
    async with FakeBotConnector() as fake, ConnectorPool() as pool:
        ref = ConversationRef.from_activity(
            Activity.model_validate(message("q", kind=kind, service_url=fake.url))
        )
        reply = TeamsReplyStream(pool.get(fake.url), ref, options=FAST)
        async with reply:
            for component in [*streamed(text, cuts), *components(text)]:
                await reply.handle(component)
            await reply.finish()
        return [call.body for call in fake.calls if isinstance(call.body, dict)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=hostile,
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=4),
    kind=st.sampled_from(["personal", "groupChat"]),
)
def test_no_text_from_a_model_or_data_becomes_a_link_in_teams(
    text: str, cuts: list[int], kind: str
) -> None:
    activities = asyncio.run(sent(text, cuts, kind))
    assert activities
    assert [p for activity in activities for p in teams_problems(activity)] == []
    for activity in activities:
        for card in cards_in(activity):
            assert_valid_card(card)


def test_a_database_value_shaped_like_a_link_shows_as_text_in_a_table_cell() -> None:
    """Regression: Teams table cells rendered Markdown, so a database value ``[Reset your
    password](https://...)`` became a live, disguised link in the card (Slack's
    ``raw_text`` cells were safe)."""
    df = DataFrameComponent.from_records([{"name": RESET, "n": 1}], title=RESET)
    rendering = render(UiComponent(rich_component=df))
    assert rendering is not None and rendering.card is not None
    assert_valid_card(rendering.card)
    cells = next(e for e in rendering.card["body"] if e["type"] == "Table")["rows"][1]["cells"]
    assert cells[0]["items"] == [
        {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": RESET}]}
    ]
    assert teams_problems({"attachments": [{"content": rendering.card}]}) == []


@settings(deadline=None)
@given(hostile)
def test_every_markdown_builder_leaves_no_link(text: str) -> None:
    elements = [text_block(text), fact_set([(text, text)]), table([text], [[text]], markdown=True)]
    card = {"type": "AdaptiveCard", "version": "1.5", "body": elements}
    assert teams_problems({"attachments": [{"content": card}]}) == []


@given(hostile, hostile)
def test_a_streamed_answer_escaped_still_extends_what_was_streamed(first: str, more: str) -> None:
    """Teams refuses a streaming chunk that does not extend the previous one (a 403 that
    reads as the user's Stop): escaping keeps every escaped prefix a prefix."""
    assert escape_message(first + more).startswith(escape_message(first))
    assert not MARKDOWN_LINK.search(escape_message(first + more))
    assert not TEAMS_HTML.search(escape_message(first + more))
    assert not MARKDOWN_LINK.search(escape_card(first + more))
