"""Issue 17: the Slack boundary and the pure converters, under arbitrary JSON and mutated
real payloads.

Property: ``read_delivery`` returns a reading or raises ``MalformedPayload`` (a
``ValueError`` naming the field); never ``KeyError``, ``AttributeError`` or ``TypeError``.
The converters take the models it produced (issue 23: parsed once), and ``read_delivery``
accepting a payload means every converter its listener calls succeeds.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.slack.context import (
    PRIVATE_THREAD,
    MalformedPayload,
    action_context,
    assistant_thread_context,
    command_context,
    command_question,
    delivery_key,
    event_context,
    home_context,
    is_from_person,
    mention_in_thread,
    message_text,
    reply_thread,
    workspace_of,
)
from adapters.slack.controls import button_message_of, feedback_of, stop_request_of
from adapters.slack.payloads import (
    AssistantThreadEvent,
    BlockActions,
    EventCallback,
    HomeEvent,
    MessageEvent,
    SlackDelivery,
    SlashCommand,
    read_delivery,
)
from tests.support.hostile import JSON, mutated

BOUNDED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MENTION = {
    "type": "event_callback",
    "team_id": "T1",
    "event_id": "Ev1",
    "event_time": 1,
    "event": {
        "type": "app_mention",
        "user": "U1",
        "text": "<@UBOT> hi",
        "ts": "1.0",
        "channel": "C1",
        "thread_ts": "0.5",
        "user_profile": {"display_name": "Ana"},
    },
}
MESSAGE = {
    "type": "event_callback",
    "team_id": "T1",
    "event": {
        "type": "message",
        "channel_type": "im",
        "user": "U1",
        "text": "hi",
        "ts": "2.0",
        "channel": "D1",
    },
}
COMMAND = {
    "team_id": "T1",
    "channel_id": "C1",
    "user_id": "U1",
    "user_name": "ana",
    "command": "/ask",
    "text": "private how many?",
    "response_url": "https://hooks/x",
}
CLICK = {
    "type": "block_actions",
    "team": {"id": "T1"},
    "user": {"id": "U1", "username": "ana"},
    "channel": {"id": "C1"},
    "container": {"message_ts": "7.0", "thread_ts": "6.0"},
    "message": {"ts": "7.0", "thread_ts": "6.0"},
    "actions": [
        {
            "action_id": "threadline_feedback",
            "value": "positive",
            "block_id": "threadline_feedback:t1",
        }
    ],
}
ASSISTANT = {
    "type": "event_callback",
    "team_id": "T1",
    "event": {
        "type": "assistant_thread_started",
        "assistant_thread": {"user_id": "U1", "channel_id": "D1", "thread_ts": "5.0"},
    },
}
HOME = {
    "type": "event_callback",
    "team_id": "T1",
    "event": {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"},
}
SAMPLES = [MENTION, MESSAGE, COMMAND, CLICK, ASSISTANT, HOME]

HOSTILE = JSON | st.sampled_from(SAMPLES).flatmap(mutated)


def convert_all(read: SlackDelivery) -> None:
    """Every converter a listener calls on the models of ``read``."""
    delivery, event = read.delivery, read.event
    if isinstance(delivery, EventCallback) and isinstance(event, MessageEvent):
        event_context(delivery, event), message_text(event, "UBOT")
        delivery_key(delivery, event), is_from_person(event, "UBOT")
        reply_thread(event, "UBOT"), mention_in_thread(event)
    if isinstance(delivery, EventCallback) and isinstance(event, AssistantThreadEvent):
        assistant_thread_context(delivery, event)
    if isinstance(delivery, EventCallback) and isinstance(event, HomeEvent):
        home_context(delivery, event)
    if isinstance(delivery, SlashCommand):
        command_question(delivery), command_context(delivery, thread_ts=PRIVATE_THREAD)
    if isinstance(delivery, BlockActions):
        action_context(delivery), feedback_of(delivery), stop_request_of(delivery)
        button_message_of(delivery)


@BOUNDED
@given(body=HOSTILE)
def test_a_delivery_is_read_or_said_to_be_malformed(body: Any) -> None:
    try:
        read = read_delivery(body)
    except MalformedPayload:
        pass
    else:
        convert_all(read)
    workspace_of(body if isinstance(body, dict) else {})  # never raises


@BOUNDED
@given(body=st.sampled_from(SAMPLES).flatmap(mutated))
def test_what_read_delivery_accepts_the_listeners_can_read(body: dict[str, Any]) -> None:
    """Accepted by the boundary means no listener meets a malformed payload later."""
    try:
        read = read_delivery(body)
    except MalformedPayload:
        return
    convert_all(read)


def test_the_examples_of_the_issue_are_malformed_not_crashes() -> None:
    """Regression: these signed payloads answered 500 (fields of the wrong type, ``event``
    null or a list, a null ``user`` or ``actions``, ``view`` a string)."""
    cases = [
        {**MENTION, "event": {**MENTION["event"], "text": 42}},
        {**MENTION, "event": None},
        {**MENTION, "event": []},
        {**CLICK, "user": None},
        {**CLICK, "actions": None},
        {"type": "view_submission", "view": "a string"},
        {k: v for k, v in COMMAND.items() if k != "user_id"},
    ]
    for body in cases:
        try:
            read_delivery(body)
        except MalformedPayload as problem:
            assert "42" not in str(problem)  # the field is named, never its value
        else:
            raise AssertionError(f"accepted {body}")
