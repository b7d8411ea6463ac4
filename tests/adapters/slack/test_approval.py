"""The approval message in Slack: Block Kit validated through slack_sdk's models, within
Slack's limits, markup in arguments and names inert, and the clicks read back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.approval import (
    APPROVAL_ACTION,
    approval_click_of,
    approval_message,
    update_approval,
)
from adapters.slack.context import ReplyTarget
from adapters.slack.payloads import BlockActions, MalformedPayload, parse_shape
from adapters.slack.render import render
from adapters.slack.stream import SlackReplyStream
from adapters.slack.testing import FakeSlackApi
from agent_core.components import ApprovalCallView, ApprovalComponent, UiComponent
from tests.adapters.inert import hostile, slack_problems


def view(**changes: Any) -> ApprovalComponent:
    values: dict[str, Any] = {
        "approval_id": "a1",
        "calls": [ApprovalCallView(tool="refund", arguments={"order": 42})],
        "asker": "Ana",
        "approvers": "Ana or anyone in finance",
        "expires_at": 3600.0,
    }
    return ApprovalComponent(**{**values, **changes})


def valid(blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None and parsed.to_dict() == block


def test_pending_approval_is_a_valid_block_kit_message_with_two_buttons() -> None:
    [message] = render(UiComponent(rich_component=view()))
    valid(message.blocks)
    assert message.blocks[0]["text"]["text"] == "Waiting for approval"
    assert "*refund*" in message.blocks[2]["text"]["text"]
    assert '"order": 42' in message.blocks[2]["text"]["text"]
    footer = message.blocks[3]["elements"][0]["text"]
    assert footer == "Only Ana or anyone in finance may approve · expires 01:00 UTC"
    buttons = message.blocks[-1]["elements"]
    assert [(b["text"]["text"], b.get("style"), b["value"]) for b in buttons] == [
        ("Approve", "primary", "a1"),
        ("Deny", "danger", "a1"),
        ("Stop", None, "a1"),
    ]
    assert message.text == "Ana asks to run refund. Only Ana or anyone in finance may approve."


@pytest.mark.parametrize(
    ("state", "headline", "footer"),
    [
        ("approved", "Approved", "Approved by Bo · 00:10 UTC"),
        ("denied", "Denied", "Denied by Bo · 00:10 UTC"),
        ("cancelled", "Stopped", "Stopped by Bo · 00:10 UTC"),
    ],
)
def test_a_decided_approval_says_who_and_when_and_has_no_buttons(
    state: str, headline: str, footer: str
) -> None:
    decided = view(state=state, decided_by="Bo", decided_at=600.0)
    [message] = approval_message(decided)
    valid(message.blocks)
    assert message.blocks[0]["text"]["text"] == headline
    assert message.blocks[-1]["type"] == "context"
    assert message.blocks[-1]["elements"][0]["text"] == footer


def test_many_calls_and_huge_arguments_stay_within_slacks_limits() -> None:
    calls = [ApprovalCallView(tool=f"t{i}", arguments={"x": "y" * 10_000}) for i in range(30)]
    [message] = approval_message(view(calls=calls))
    valid(message.blocks)
    assert len(message.blocks) <= 50
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in message.blocks)
    assert any("and 20 more calls" in str(b) for b in message.blocks)


@settings(deadline=None)
@given(hostile, hostile, hostile)
def test_markup_in_arguments_and_names_arrives_inert(value: str, asker: str, tool: str) -> None:
    hostile_view = view(
        calls=[ApprovalCallView(tool=tool or "t", arguments={"note": value, value[:20]: 1})],
        asker=asker or "a",
        approvers=asker or "a",
    )
    for decided in (hostile_view, hostile_view.update(state="denied", decided_by=asker)):
        for message in approval_message(decided):
            valid(message.blocks)
            args = {"text": message.text, "blocks": message.blocks}
            assert slack_problems(args) == []


def click(action_id: str, value: str = "a1") -> BlockActions:
    body = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "actions": [{"action_id": action_id, "value": value, "block_id": "b"}],
    }
    read: BlockActions = parse_shape(BlockActions, body, "block_actions")
    return read


def test_clicks_are_read_from_the_buttons() -> None:
    for decision in ("approve", "deny", "stop"):
        read = approval_click_of(click(f"{APPROVAL_ACTION}:{decision}"))
        assert read is not None and (read.approval_id, read.decision) == ("a1", decision)
    assert approval_click_of(click(f"{APPROVAL_ACTION}:maybe")) is None
    assert approval_click_of(click(f"{APPROVAL_ACTION}:approve", value="")) is None
    assert approval_click_of(click("threadline_stop")) is None
    with pytest.raises(MalformedPayload):  # no action at all: refused as the payload is read
        parse_shape(
            BlockActions,
            {"type": "block_actions", "user": {"id": "U1"}, "actions": []},
            "block_actions",
        )


@given(st.text(max_size=30), st.text(max_size=300))
def test_any_click_payload_is_read_or_ignored_never_crashes(action_id: str, value: str) -> None:
    read = approval_click_of(click(action_id, value))
    assert read is None or (read.approval_id == value and action_id.endswith(read.decision))


async def test_the_reply_stream_posts_it_says_where_and_it_is_updated_in_place() -> None:

    noted: list[tuple[str, dict[str, Any]]] = []

    async def on_approval(approval_id: str, where: dict[str, Any]) -> None:
        noted.append((approval_id, where))

    async with FakeSlackApi() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        target = ReplyTarget("C1", "1.0", "T1", "U1")
        async with SlackReplyStream(client, target, on_approval=on_approval) as reply:
            await reply.handle(UiComponent(rich_component=view()))
            await reply.finish()
        [(approval_id, where)] = noted
        [posted] = fake.calls_to("chat.postMessage")
        assert approval_id == "a1" and where["ts"] == posted.response["ts"]
        assert (where["channel"], where["thread_ts"], where["team"]) == ("C1", "1.0", "T1")
        await update_approval(client, where, view(state="approved", decided_by="Bo"))
        [updated] = fake.calls_to("chat.update")
        assert updated.args["ts"] == where["ts"]
        assert [b["type"] for b in updated.args["blocks"]][-1] == "context"  # no buttons
        assert "Approved by Bo" in str(updated.args["blocks"])
