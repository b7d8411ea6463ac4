"""The approval card in Teams: valid Adaptive Card 1.5 (Teams' universal-action fields
aside), markup in arguments and names never a link, and the clicks read back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.teams.activities import ConversationRef
from adapters.teams.approval import (
    APPROVAL_VERB,
    REFRESH_VERB,
    approval_card,
    approval_click_of,
    approval_refresh_of,
    update_approval,
)
from adapters.teams.payloads import Activity
from adapters.teams.render import render
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from adapters.teams.testing import FakeBotConnector
from agent_core.components import (
    ApprovalCallView,
    ApprovalComponent,
    RichTextComponent,
    UiComponent,
)
from bots.teams.connector import ConnectorPool
from tests.adapters.inert import hostile, teams_problems
from tests.adapters.teams.payloads import message
from tests.adapters.teams.schemas import assert_valid_card, cards_in


def view(**changes: Any) -> ApprovalComponent:
    values: dict[str, Any] = {
        "approval_id": "a1",
        "calls": [ApprovalCallView(tool="refund", arguments={"order": 42})],
        "asker": "Ana",
        "approvers": "Ana",
        "expires_at": 3600.0,
    }
    return ApprovalComponent(**{**values, **changes})


def runs(card: dict[str, Any]) -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "TextRun":
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(card["body"])
    return found


def test_pending_approval_is_a_valid_card_with_universal_actions() -> None:
    rendering = render(UiComponent(rich_component=view()))
    assert rendering is not None and rendering.card is not None
    card = rendering.card
    assert_valid_card(card)
    assert runs(card)[:3] == ["Waiting for approval", "Ana asks to run refund.", "refund"]
    assert '"order": 42' in runs(card)[3]
    assert runs(card)[-1] == "Only Ana may approve · expires 01:00 UTC"
    assert [(a["verb"], a["data"]["decision"], a["style"]) for a in card["actions"]] == [
        (APPROVAL_VERB, "approve", "positive"),
        (APPROVAL_VERB, "deny", "destructive"),
        (APPROVAL_VERB, "stop", "default"),
    ]
    assert {a["data"]["threadline_approval"] for a in card["actions"]} == {"a1"}
    assert card["refresh"]["action"]["verb"] == REFRESH_VERB


def test_a_decided_approval_is_refreshed_without_buttons() -> None:
    card = approval_card(
        view(state="expired", note="nobody decided within 15 minutes", decided_at=1000.0)
    )
    assert_valid_card(card)
    assert "actions" not in card
    assert runs(card)[0] == "Expired"
    assert runs(card)[-1] == "Expired: nobody decided within 15 minutes · 00:16 UTC"


@settings(deadline=None)
@given(hostile, hostile, hostile)
def test_markup_in_arguments_and_names_is_never_a_link(value: str, asker: str, tool: str) -> None:
    hostile_view = view(
        calls=[ApprovalCallView(tool=tool or "t", arguments={"note": value})],
        asker=asker or "a",
        approvers=asker or "a",
    )
    for shown in (hostile_view, hostile_view.update(state="approved", decided_by=asker)):
        card = approval_card(shown)
        assert_valid_card(card)
        assert teams_problems({"attachments": [{"content": card}]}) == []
        assert not any(node.get("type") == "TextBlock" for node in card["body"][0]["items"])


def invoke(verb: str, data: Any) -> dict[str, Any]:
    return {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}},
    }


def test_clicks_and_refreshes_are_read_from_the_invoke() -> None:
    approve = approval_click_of(
        invoke(APPROVAL_VERB, {"threadline_approval": "a1", "decision": "approve"})
    )
    assert approve is not None and (approve.approval_id, approve.decision) == ("a1", "approve")
    deny = approval_click_of(
        invoke(APPROVAL_VERB, {"threadline_approval": "a1", "decision": "deny"})
    )
    assert deny is not None and deny.decision == "deny"
    assert approval_click_of(invoke(APPROVAL_VERB, {"threadline_approval": "a1"})) is None
    assert approval_click_of(invoke("threadline.stop", {"threadline_stop": "1"})) is None
    assert approval_refresh_of(invoke(REFRESH_VERB, {"threadline_approval": "a1"})) == "a1"
    assert approval_refresh_of(invoke(APPROVAL_VERB, {"threadline_approval": "a1"})) is None


@given(st.from_type(dict) | st.text() | st.none(), st.text(max_size=20))
def test_any_invoke_is_read_or_ignored_never_crashes(data: Any, verb: str) -> None:
    approval_click_of(invoke(verb, data))
    approval_refresh_of(invoke(verb, data))
    approval_click_of({"type": "invoke", "name": "adaptiveCard/action", "value": data})


@pytest.mark.parametrize(
    ("kind", "text", "messages"),
    [("personal", None, 1), ("groupChat", "I'll refund it once approved.", 2)],
)
async def test_the_reply_stream_sends_it_alone_says_where_and_it_is_replaced_whole(
    kind: str, text: str | None, messages: int
) -> None:

    noted: list[tuple[str, dict[str, Any]]] = []

    async def on_approval(approval_id: str, where: dict[str, Any]) -> None:
        noted.append((approval_id, where))

    async with FakeBotConnector() as fake, ConnectorPool() as pool:
        ref = ConversationRef.from_activity(
            Activity.model_validate(message("q", kind=kind, service_url=fake.url))
        )
        connector = pool.get(fake.url)
        reply = TeamsReplyStream(
            connector, ref, options=ReplyOptions(pace=0.0), on_approval=on_approval
        )
        async with reply:
            if text:
                await reply.handle(UiComponent(rich_component=RichTextComponent(content=text)))
            await reply.handle(UiComponent(rich_component=view()))
            await reply.finish()
        sent = [c for c in fake.calls if c.activity_type == "message"]
        assert len(sent) == messages
        [(approval_id, where)] = noted
        assert approval_id == "a1" and where["activity_id"] == reply.message_ids[-1]
        (card,) = cards_in(sent[-1].body)
        assert card["actions"][0]["title"] == "Approve"
        await update_approval(connector, where, view(state="denied", decided_by="Bo"))
        [update] = [c for c in fake.calls if c.operation == "update_activity"]
        (updated,) = cards_in(update.body)
        assert_valid_card(updated)
        assert "actions" not in updated and "Denied by Bo" in str(updated)
