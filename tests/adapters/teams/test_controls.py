"""adapters.teams.controls and activities: invoke parsing (incl. malformed) and outgoing shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.teams import activities
from adapters.teams.activities import Citation, ConversationRef
from adapters.teams.controls import FEEDBACK_LOOP, button_message_of, feedback_of
from adapters.teams.payloads import Activity
from tests.adapters.teams.payloads import TENANT, invoke, message


def feedback_invoke(action_value: Any, **extra: Any) -> dict[str, Any]:
    body = invoke("message/submitAction", {"actionName": "feedback", "actionValue": action_value})
    body.update({"replyToId": "m-1", **extra})
    return body


def test_dislike_with_plain_text_feedback() -> None:
    feedback = feedback_of(feedback_invoke({"reaction": "dislike", "feedback": "not json"}))
    assert feedback is not None
    assert (feedback.positive, feedback.comment, feedback.message_id) == (False, "not json", "m-1")
    assert feedback.conversation_id == f"teams:{TENANT}:a:1personal-aad-ana"


def test_like_without_text() -> None:
    feedback = feedback_of(feedback_invoke({"reaction": "like", "feedback": json.dumps({})}))
    assert feedback is not None and feedback.positive and feedback.comment is None


@pytest.mark.parametrize(
    "activity",
    [
        feedback_invoke({"reaction": "love"}),
        feedback_invoke("not a mapping"),
        feedback_invoke({"reaction": "like"}, replyToId=None),
        invoke("message/submitAction", {"actionName": "other"}),
        invoke("message/submitAction", "garbage"),
        message("like"),
    ],
)
def test_malformed_feedback_is_ignored(activity: dict[str, Any]) -> None:
    assert feedback_of(activity) is None


def test_card_action() -> None:
    value = {
        "action": {
            "type": "Action.Execute",
            "verb": "threadline.action",
            "data": {"threadline_action": "  top products  "},
        }
    }
    assert button_message_of(invoke("adaptiveCard/action", value)) == "top products"


@pytest.mark.parametrize(
    "value",
    [
        {"action": {"verb": "someone.else", "data": {"threadline_action": "x"}}},
        {"action": {"verb": "threadline.action", "data": {"threadline_action": "  "}}},
        {"action": {"verb": "threadline.action", "data": "x"}},
        {"action": None},
        {},
    ],
)
def test_other_or_malformed_card_actions_are_ignored(value: dict[str, Any]) -> None:
    assert button_message_of(invoke("adaptiveCard/action", value)) is None


def test_message_activity_shape_and_ai_entity() -> None:
    ref = ConversationRef.from_activity(Activity.model_validate(message("hi", kind="channel")))
    body = activities.message(
        ref,
        "**hi**",
        attachments=[{"contentType": "x"}],
        entities=[activities.ai_entity([Citation("Doc", "https://d", "about d")])],
        channel_data=FEEDBACK_LOOP,
    )
    assert body["replyToId"] == ref.activity_id
    assert body["textFormat"] == "markdown" and body["attachmentLayout"] == "list"
    (entity,) = body["entities"]
    assert entity["additionalType"] == ["AIGeneratedContent"]
    assert entity["citation"][0]["appearance"] == {
        "@type": "DigitalDocument",
        "name": "Doc",
        "url": "https://d",
        "abstract": "about d",
    }
    final = activities.stream_final(ref, "s-1", body)
    assert final["entities"][0] == {"type": "streaminfo", "streamId": "s-1", "streamType": "final"}
    assert final["channelData"] == {
        "feedbackLoop": {"type": "default"},
        "streamId": "s-1",
        "streamType": "final",
    }
    informative = activities.stream_informative(ref, "x" * 2000, 1)
    assert len(informative["text"]) == 1000
