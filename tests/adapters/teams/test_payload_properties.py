"""Issue 17: the pure Teams converters, under arbitrary JSON and mutated real activities.

Property: ``request_context`` returns a context or raises ``MalformedPayload`` naming the
field; the small readers (``message_text``, ``thread_key``, the controls...) never raise;
and what ``read_activity`` accepts, ``request_context`` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.teams.context import (
    MalformedPayload,
    asker_id,
    conversation_type,
    delivery_key,
    message_text,
    request_context,
    tenant_id,
    thread_key,
    turn_key,
)
from adapters.teams.controls import button_message_of, feedback_of, stop_request_of
from adapters.teams.files import consent_answer_of
from adapters.teams.payloads import Activity, read_activity
from tests.adapters.teams.payloads import invoke, message
from tests.support.hostile import JSON, mutated

BOUNDED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SAMPLES = [
    message("hi", kind="personal"),
    message("hi", kind="groupChat"),
    message("hi", kind="channel"),
    invoke("message", {"actionName": "feedback", "actionValue": {"reaction": "like"}}),
    invoke(
        "fileConsent/invoke", {"type": "fileUpload", "action": "accept", "context": {"offer": "o1"}}
    ),
    {**message(""), "type": "conversationUpdate", "membersAdded": [{"id": "28:app-0000"}]},
]
READERS: dict[str, Callable[[Any], Any]] = {
    "message_text": message_text,
    "thread_key": thread_key,
    "turn_key": turn_key,
    "delivery_key": delivery_key,
    "asker_id": asker_id,
    "tenant_id": tenant_id,
    "conversation_type": conversation_type,
    "feedback_of": feedback_of,
    "stop_request_of": stop_request_of,
    "button_message_of": button_message_of,
    "consent_answer_of": consent_answer_of,
}
HOSTILE = st.dictionaries(st.text(max_size=8), JSON, max_size=6) | st.sampled_from(SAMPLES).flatmap(
    mutated
)


@BOUNDED
@given(activity=HOSTILE, name=st.sampled_from(sorted(READERS)))
def test_the_readers_never_raise(activity: dict[str, Any], name: str) -> None:
    READERS[name](activity)


@BOUNDED
@given(activity=HOSTILE)
def test_request_context_returns_or_says_the_activity_is_malformed(
    activity: dict[str, Any],
) -> None:
    try:
        read = read_activity(activity)
    except MalformedPayload:
        read = None
    try:
        context = request_context(activity)
    except MalformedPayload:
        assert not isinstance(read, Activity)  # what read_activity accepts is readable
        return
    assert isinstance(read, Activity)
    assert context.metadata["user_id"] and context.metadata["thread_id"]


def test_the_examples_of_the_issue_are_malformed_not_crashes() -> None:
    """Regression: an activity without ``serviceUrl`` answered 500 once authenticated."""
    for missing in ("serviceUrl", "from", "conversation"):
        activity = {k: v for k, v in message("hi").items() if k != missing}
        try:
            request_context(activity)
        except MalformedPayload as problem:
            assert missing in str(problem)
        else:
            raise AssertionError(f"accepted an activity without {missing}")
