"""adapters.teams.context: activity -> RequestContext, thread key and mention stripping."""

from __future__ import annotations

import pytest
from botbuilder.schema import Activity

from adapters.teams.context import (
    MalformedPayload,
    conversation_type,
    message_text,
    request_context,
    strip_mentions,
    tenant_id,
    thread_key,
    wire_activity,
)
from agent_core.channel import is_direct_message
from tests.adapters.teams.payloads import BOT_ID, TENANT, message


def test_personal_chat_context() -> None:
    activity = message("What were sales last week?", user="aad-ana", user_name="Ana Lima")
    context = request_context(activity)
    assert context.metadata == {
        "platform": "teams",
        "workspace_id": TENANT,
        "user_id": "aad-ana",
        "user_name": "Ana Lima",
        "channel_id": "a:1personal-aad-ana",
        "thread_id": "a:1personal-aad-ana",
        "is_dm": True,
        "teams_conversation_type": "personal",
        "teams_user_id": "29:aad-ana",
        "teams_aad_object_id": "aad-ana",
        "teams_service_url": "https://smba.trafficmanager.net/amer/",
    }
    assert is_direct_message(context.metadata)
    assert thread_key(activity) == f"teams:{TENANT}:a:1personal-aad-ana"


def test_channel_context_carries_team_channel_and_reply_chain() -> None:
    activity = message("status?", kind="channel")
    context = request_context(activity)
    assert context.metadata["is_dm"] is False
    assert context.metadata["teams_conversation_type"] == "channel"
    assert context.metadata["teams_team_id"] == "19:team-1@thread.tacv2"
    assert context.metadata["teams_channel_id"] == "19:general@thread.tacv2"
    assert thread_key(activity).endswith(";messageid=1700000000000")
    assert message_text(activity) == "status?"


def test_group_chat_is_not_a_dm() -> None:
    activity = message("hello", kind="groupChat")
    assert conversation_type(activity) == "groupChat"
    assert request_context(activity).metadata["is_dm"] is False


def test_bot_mention_removed_other_mentions_unwrapped() -> None:
    activity = message("ignored", kind="groupChat")
    activity["text"] = "<at>Threadline</at> ask <at>Bo Chen</at> about &quot;Q3&quot;&nbsp;now"
    activity["entities"].append(
        {"type": "mention", "text": "<at>Bo Chen</at>", "mentioned": {"id": "29:bo", "name": "Bo"}}
    )
    assert message_text(activity) == 'ask Bo Chen about "Q3" now'


def test_mention_in_the_middle_and_multiline_text() -> None:
    activity = message("x", kind="channel")
    activity["text"] = "please <at>Threadline</at>   summarise\n  line two  "
    assert strip_mentions(activity["text"], activity) == "please summarise\nline two"


def test_card_action_value_is_the_message() -> None:
    activity = message("", value={"threadline_action": "/help"})
    assert message_text(activity) == "/help"


def test_tenant_falls_back_to_channel_data_and_type_to_is_group() -> None:
    activity = message("hi", kind="groupChat")
    del activity["conversation"]["tenantId"]
    del activity["conversation"]["conversationType"]
    assert tenant_id(activity) == TENANT
    assert conversation_type(activity) == "groupChat"


def test_malformed_activity_is_refused_by_the_converter_and_read_safely_elsewhere() -> None:
    """Issue 17: a malformed activity gave a context with an empty user id (a user nobody
    is); the converter now refuses it with ``MalformedPayload`` (a ``ValueError``) naming
    the field, and the small readers still never raise."""
    activity = {"type": "message", "from": "not-a-dict", "conversation": None, "entities": "x"}
    with pytest.raises(MalformedPayload, match="serviceUrl"):
        request_context(activity)
    assert message_text(activity) == ""
    assert thread_key(activity) == "teams::"


def test_missing_aad_object_id_falls_back_to_channel_account_id() -> None:
    activity = message("hi")
    del activity["from"]["aadObjectId"]
    assert request_context(activity).metadata["user_id"] == "29:aad-ana"


def test_botbuilder_activity_is_accepted_through_wire_activity() -> None:
    activity = Activity().deserialize(message("hello there", kind="channel"))
    wire = wire_activity(activity)
    assert wire["recipient"]["id"] == BOT_ID
    assert message_text(wire) == "hello there"
    assert request_context(wire).metadata["teams_team_id"] == "19:team-1@thread.tacv2"


def test_wire_activity_rejects_non_activities() -> None:
    with pytest.raises(TypeError):
        wire_activity(42)
