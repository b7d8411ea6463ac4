"""Slack's payload models -> RequestContext and thread keys (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.slack.context import (
    PRIVATE_THREAD,
    action_context,
    command_context,
    conversation_id,
    event_context,
    strip_mention,
    thread_key,
    workspace_of,
)
from adapters.slack.payloads import (
    Click,
    EventCallback,
    MessageEvent,
    SlashCommand,
    read_delivery,
)


def message_of(body: dict[str, Any]) -> tuple[EventCallback, MessageEvent]:
    """The models ``read_delivery`` makes of an event body (what the listeners are given)."""
    read = read_delivery(body)
    assert isinstance(read.delivery, EventCallback) and isinstance(read.event, MessageEvent)
    return read.delivery, read.event


def mention_body(**event: Any) -> dict[str, Any]:
    return {
        "team_id": "T1",
        "enterprise_id": "E1",
        "type": "event_callback",
        "event_id": "Ev1",
        "event": {
            "type": "app_mention",
            "user": "U1",
            "text": "<@UBOT> hi",
            "ts": "100.0",
            "channel": "C1",
            **event,
        },
    }


def test_mention_at_top_level_starts_a_thread_at_its_own_ts() -> None:
    ctx = event_context(*message_of(mention_body()))
    assert ctx.metadata == {
        "platform": "slack",
        "workspace_id": "T1",
        "slack_enterprise_id": "E1",
        "user_id": "U1",
        "channel_id": "C1",
        "thread_id": "100.0",
        "is_dm": False,
        "slack_event_type": "app_mention",
    }
    assert conversation_id(ctx) == "slack:T1:C1:100.0"


def test_mention_inside_a_thread_uses_the_thread_ts() -> None:
    ctx = event_context(*message_of(mention_body(thread_ts="90.0")))
    assert conversation_id(ctx) == thread_key("T1", "C1", "90.0")


def test_only_the_bots_own_dm_counts_as_a_dm() -> None:
    """Regression: a D... channel id was taken as "the bot's DM", so admin-only detail could
    render inline in a DM between two people (a slash command there, a mention without
    channel_type)."""
    im = event_context(*message_of(mention_body(type="message", channel_type="im", channel="D9")))
    assert im.metadata["is_dm"] is True
    no_type = event_context(*message_of(mention_body(type="message", channel="D9")))
    assert no_type.metadata["is_dm"] is False
    group = event_context(
        *message_of(mention_body(type="message", channel_type="mpim", channel="G1"))
    )
    assert group.metadata["is_dm"] is False


def test_user_name_comes_from_the_signed_user_profile_when_present() -> None:
    ctx = event_context(
        *message_of(mention_body(user_profile={"display_name": "", "real_name": "Ana B"}))
    )
    assert ctx.metadata["user_name"] == "Ana B"


def test_slash_command_context_carries_command_and_thread() -> None:
    body = {
        "team_id": "T1",
        "channel_id": "C1",
        "channel_name": "general",
        "user_id": "U1",
        "user_name": "ana",
        "command": "/ask",
        "text": "private how many?",
    }
    ctx = command_context(SlashCommand.model_validate(body), thread_ts=PRIVATE_THREAD)
    assert ctx.metadata["command"] == "/ask"
    assert ctx.metadata["is_dm"] is False
    assert "slack_enterprise_id" not in ctx.metadata
    assert conversation_id(ctx) == "slack:T1:C1:private"
    dm = command_context(
        SlashCommand.model_validate({**body, "channel_id": "D1", "channel_name": "directmessage"}),
        thread_ts="1",
    )
    assert dm.metadata["is_dm"] is False  # maybe a DM between two people


def test_block_action_context_prefers_the_thread_over_the_message() -> None:
    body = {
        "type": "block_actions",
        "team": {"id": "T1", "domain": "x"},
        "enterprise": None,
        "user": {"id": "U2", "username": "bo", "team_id": "T1"},
        "channel": {"id": "C1", "name": "general"},
        "container": {"type": "message", "message_ts": "7.0", "channel_id": "C1"},
        "message": {"ts": "7.0", "thread_ts": "6.0"},
    }
    ctx = action_context(Click.model_validate(body))
    assert (ctx.metadata["user_id"], ctx.metadata["thread_id"]) == ("U2", "6.0")
    assert conversation_id(ctx) == "slack:T1:C1:6.0"
    body["message"] = {"ts": "7.0"}
    assert action_context(Click.model_validate(body)).metadata["thread_id"] == "7.0"
    body["container"]["is_ephemeral"] = True
    body.pop("message")
    assert action_context(Click.model_validate(body)).metadata["thread_id"] == PRIVATE_THREAD


@pytest.mark.parametrize(
    ("text", "bot", "expected"),
    [
        ("<@UBOT> what's up", "UBOT", "what's up"),
        ("<@UBOT>: what's up", "UBOT", "what's up"),
        ("<@UBOT|threadline> , tell <@U2> hi", "UBOT", "tell <@U2> hi"),
        ("ask <@UBOT> about <@UBOT>", "UBOT", "ask about"),
        ("<@UBOT>", "UBOT", ""),
        ("<@UOTHER> hi", "UBOT", "<@UOTHER> hi"),
        ("<@UX> hi <@UY>", None, "hi <@UY>"),
        ("no mention", None, "no mention"),
    ],
)
def test_strip_mention(text: str, bot: str | None, expected: str) -> None:
    assert strip_mention(text, bot) == expected


def test_workspace_of_event_falls_back_to_event_team() -> None:
    assert workspace_of({"event": {"team": "T7"}}) == ("T7", None)
    assert workspace_of({}) == ("", None)
