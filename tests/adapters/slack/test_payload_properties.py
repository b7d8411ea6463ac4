"""Issue 17: the pure Slack converters, under arbitrary JSON and mutated real payloads.

Property: every converter returns its value or raises ``MalformedPayload`` (a
``ValueError`` naming the field); never ``KeyError``, ``AttributeError`` or ``TypeError``.
And ``read_delivery`` accepting a payload means every converter its listener calls succeeds.
"""

from __future__ import annotations

from collections.abc import Callable
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
from adapters.slack.payloads import BlockActions, MessageEvent, SlashCommand, read_delivery
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

CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "event_context": event_context,
    "message_text": lambda body: message_text(body, "UBOT"),
    "delivery_key": delivery_key,
    "is_from_person": lambda body: is_from_person(body, "UBOT"),
    "reply_thread": lambda body: reply_thread(body, "UBOT"),
    "mention_in_thread": mention_in_thread,
    "command_question": command_question,
    "command_context": lambda body: command_context(body, thread_ts=PRIVATE_THREAD),
    "action_context": action_context,
    "assistant_thread_context": assistant_thread_context,
    "home_context": home_context,
    "feedback_of": feedback_of,
    "stop_request_of": stop_request_of,
    "button_message_of": button_message_of,
    "read_delivery": read_delivery,
}
HOSTILE = JSON | st.sampled_from(SAMPLES).flatmap(mutated)


def only_malformed(convert: Callable[[Any], Any], body: Any) -> None:
    try:
        convert(body)
    except MalformedPayload:
        pass


@BOUNDED
@given(body=HOSTILE, name=st.sampled_from(sorted(CONVERTERS)))
def test_a_converter_returns_or_says_the_payload_is_malformed(body: Any, name: str) -> None:
    if isinstance(body, dict) or name in ("read_delivery",):
        only_malformed(CONVERTERS[name], body)
    workspace_of(body if isinstance(body, dict) else {})  # never raises


@BOUNDED
@given(body=st.sampled_from(SAMPLES).flatmap(mutated))
def test_what_read_delivery_accepts_the_listeners_can_read(body: dict[str, Any]) -> None:
    """Accepted by the boundary means no listener meets a malformed payload later."""
    try:
        read = read_delivery(body)
    except MalformedPayload:
        return
    if isinstance(read.event, MessageEvent):
        event_context(body), message_text(body, "UBOT"), delivery_key(body)
        is_from_person(body, "UBOT"), reply_thread(body, "UBOT"), mention_in_thread(body)
    if isinstance(read.delivery, SlashCommand):
        command_question(body), command_context(body, thread_ts="")
    if isinstance(read.delivery, BlockActions):
        action_context(body), feedback_of(body), stop_request_of(body), button_message_of(body)


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
