"""Approval in the conversation, through the real Teams bot (issue 25): a tool that changes
things waits for the right person's ``Action.Execute`` click on an Adaptive Card; the clicker
gets the refreshed card (universal actions), everyone the updated message, and the turn
resumes in the conversation; the tool runs at most once. In chats and channels alike.

Each "bad input" of the issue is here: a non-approver's click, one from another
conversation, a forged or unsigned invoke, an unknown id, a double click, a click after
expiry or after Stop, arguments carrying Adaptive Card markup, a state outage while waiting.
``THREADLINE_TEST_AGENT=graph`` runs all of it against ``GraphAgent``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from adapters.teams.testing import ConnectorCall
from agent_core import InMemoryAuditLogger
from agent_core.audit import AuditEventType
from agent_core.llm.scripted import ScriptEntry
from agent_core.state.testing import RedisServer, redis_available
from agent_core.state_factory import State, StateSettings, build_state
from tests.adapters.inert import teams_problems
from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.bots.approval_kit import Refund, approval_agent, refund_script
from tests.bots.teams.harness import ADMIN, MEMBER, TeamsHarness, teams_bot

BO = "aad-bo"
NAMES = {MEMBER: "Ana Lima", ADMIN: "Alex Admin", BO: "Bo"}
ATTACK = "[Reset your password](https://evil.example/reset) <at>everyone</at> **now**"


@asynccontextmanager
async def approving_bot(
    monkeypatch: pytest.MonkeyPatch,
    script: Sequence[ScriptEntry] | None = None,
    *,
    refund: Refund | None = None,
    approvers: list[str] | None = None,
    expires_after: float | None = None,
    state: State | None = None,
    **options: Any,
) -> AsyncIterator[tuple[TeamsHarness, Refund]]:
    refund = refund or Refund()
    state = state or build_state(StateSettings(ephemeral=True))

    def factory(resolver: Any, settings: Any) -> Any:
        return approval_agent(
            script if script is not None else refund_script(),
            resolver,
            state,
            refund=refund,
            approvers=approvers,
            expires_after=expires_after,
        )

    options.setdefault("group_map", {"users": {BO: ["analysts"]}})
    async with teams_bot(monkeypatch, agent_factory=factory, state=state, **options) as h:
        yield h, refund


def approval_cards(h: TeamsHarness) -> list[tuple[ConnectorCall, dict[str, Any]]]:
    """Every approval card the bot sent (posted or updated), with the call."""
    found = []
    for call in h.fake.calls:
        if not isinstance(call.body, dict):
            continue
        for card in cards_in(call.body):
            if "threadline.approval" in json.dumps(card.get("refresh") or {}):
                found.append((call, card))
    return found


def approval_id_of(card: dict[str, Any]) -> str:
    return str(card["refresh"]["action"]["data"]["threadline_approval"])


async def ask(h: TeamsHarness, *, user: str = MEMBER, kind: str = "groupChat") -> tuple[str, str]:
    """A message asking for a refund; the approval's id and its card's message id."""
    await h.post(h.message("refund order 42", kind=kind, user=user, user_name=NAMES[user]))
    await h.host.idle()
    [(call, card)] = approval_cards(h)
    assert call.operation == "reply_to_activity"
    return approval_id_of(card), str(call.response["id"])


async def click(
    h: TeamsHarness,
    decision: str,
    approval_id: str,
    *,
    user: str = MEMBER,
    kind: str = "groupChat",
    **options: Any,
) -> dict[str, Any]:
    """An Action.Execute on the card; the invoke response Teams got."""
    value = {
        "action": {
            "type": "Action.Execute",
            "verb": "threadline.approval",
            "data": {"threadline_approval": approval_id, "decision": decision},
        }
    }
    activity = h.invoke(
        "adaptiveCard/action", value, kind=kind, user=user, user_name=NAMES[user], **options
    )
    response = await h.post(activity)
    assert response.status == 200
    body: dict[str, Any] = await response.json()
    await h.host.idle()
    return body


def updates_of(h: TeamsHarness, message_id: str) -> list[dict[str, Any]]:
    return [
        card
        for call, card in approval_cards(h)
        if call.operation == "update_activity" and call.activity_id == message_id
    ]


def answers_text(h: TeamsHarness) -> str:
    return json.dumps([c.body for c in h.fake.calls if c.activity_type == "message"])


# --- what the conversation shows, and who may decide ------------------------------------------


@pytest.mark.parametrize("kind", ["groupChat", "channel", "personal"])
async def test_the_approval_card_is_valid_and_nothing_runs_before_a_click(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    async with approving_bot(monkeypatch) as (h, refund):
        await ask(h, kind=kind)
        [(_, card)] = approval_cards(h)
        assert_valid_card(card)
        assert [a["title"] for a in card["actions"]] == ["Approve", "Deny", "Stop"]
        assert {a["type"] for a in card["actions"]} == {"Action.Execute"}
        shown = json.dumps(card)
        assert "Waiting for approval" in shown and "refund" in shown and "42" in shown
        assert refund.runs == []


@pytest.mark.parametrize(
    ("asker", "approver", "kind"),
    [
        (MEMBER, MEMBER, "personal"),
        (MEMBER, MEMBER, "channel"),
        (BO, ADMIN, "groupChat"),
        (MEMBER, BO, "channel"),
    ],
    ids=["the asker in a personal chat", "the asker in a channel", "an admin", "a group member"],
)
async def test_an_approver_approves_everyone_sees_it_and_the_tool_runs_once(
    monkeypatch: pytest.MonkeyPatch, asker: str, approver: str, kind: str
) -> None:
    audit = InMemoryAuditLogger()
    async with approving_bot(monkeypatch) as (h, refund):
        for served in h.host.agent.served_agents():
            served.audit_logger = audit
        approval_id, message_id = await ask(h, user=asker, kind=kind)
        response = await click(h, "approve", approval_id, user=approver, kind=kind)
        assert response["type"] == "application/vnd.microsoft.card.adaptive"
        refreshed = response["value"]
        assert_valid_card(refreshed)
        assert "actions" not in refreshed
        assert f"Approved by {NAMES[approver]}" in json.dumps(refreshed)
        [updated] = updates_of(h, message_id)  # the message, for everyone
        assert updated == refreshed
        assert refund.runs == [42]
        assert "Refunded." in answers_text(h)
        again = await click(h, "approve", approval_id, user=approver, kind=kind)  # a double click
        assert again["value"] == refreshed
        assert refund.runs == [42]
    kinds = [event.event_type for event in audit.events]
    assert AuditEventType.APPROVAL_REQUESTED in kinds and AuditEventType.APPROVAL_DECIDED in kinds


async def test_a_non_approver_is_told_alone_and_nothing_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with approving_bot(monkeypatch, approvers=["asker"]) as (h, refund):
        approval_id, message_id = await ask(h)
        response = await click(h, "approve", approval_id, user=BO)
        assert response == {
            "statusCode": 200,
            "type": "application/vnd.microsoft.activity.message",
            "value": "Only Ana Lima may approve this.",
        }
        assert updates_of(h, message_id) == [] and refund.runs == []
        await click(h, "approve", approval_id)
        assert refund.runs == [42]


async def test_deny_and_the_turn_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    script = refund_script(then="I did not refund it.")
    async with approving_bot(monkeypatch, script) as (h, refund):
        approval_id, _ = await ask(h)
        response = await click(h, "deny", approval_id)
        assert "Denied by Ana Lima" in json.dumps(response["value"])
        assert refund.runs == []
        assert "Not run: Ana Lima denied this tool call." in json.dumps(
            [m.content for r in h.llm.requests for m in r.messages]
        )
        assert "I did not refund it." in answers_text(h)


async def test_an_expired_approval_is_a_denial_that_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with approving_bot(monkeypatch, expires_after=0.05) as (h, refund):
        approval_id, message_id = await ask(h)
        await asyncio.sleep(0.1)
        assert await h.host.approvals.sweep() == 1
        await h.host.idle()
        [updated] = updates_of(h, message_id)
        assert "Expired" in json.dumps(updated)
        response = await click(h, "approve", approval_id)  # a click after expiry
        assert "Expired" in json.dumps(response["value"])
        assert refund.runs == []


async def test_stop_while_waiting_cancels_it(monkeypatch: pytest.MonkeyPatch) -> None:
    async with approving_bot(monkeypatch) as (h, refund):
        approval_id, message_id = await ask(h)
        asked = len(h.llm.requests)
        refused = await click(h, "stop", approval_id, user=BO)  # only the asker may stop it
        assert refused["type"] == "application/vnd.microsoft.activity.message"
        response = await click(h, "stop", approval_id)
        assert "Stopped by Ana Lima" in json.dumps(response["value"])
        assert len(updates_of(h, message_id)) == 1
        assert len(h.llm.requests) == asked
        assert "nothing to add" not in answers_text(h)  # the card says it; nothing more
        after = await click(h, "approve", approval_id)  # a click after Stop
        assert "Stopped by Ana Lima" in json.dumps(after["value"])
        assert refund.runs == []


async def test_concurrent_clicks_run_the_tool_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async with approving_bot(monkeypatch) as (h, refund):
        approval_id, message_id = await ask(h)
        responses = await asyncio.gather(
            *(click(h, "approve", approval_id, user=user) for user in (MEMBER, ADMIN, BO, MEMBER))
        )
        await h.host.idle()
        assert refund.runs == [42]
        assert len(updates_of(h, message_id)) == 1
        assert len({json.dumps(r["value"]) for r in responses}) == 1  # all see one decision


# --- forged, replayed and misplaced clicks ----------------------------------------------------


async def test_forged_and_misplaced_clicks_decide_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    async with approving_bot(monkeypatch) as (h, refund):
        approval_id, _ = await ask(h)
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": "threadline.approval",
                "data": {"threadline_approval": approval_id, "decision": "approve"},
            }
        }
        forged = h.invoke("adaptiveCard/action", value, kind="groupChat")
        unsigned = await h.post(forged, auth=None)
        wrong = await h.post(forged, auth="Bearer not-a-token")
        another_bot = await h.post(forged, auth=h.fake.sign(audience="another-bots-app-id"))
        stale = await h.post(forged, auth=h.fake.sign(expires_in=-3600))
        not_microsofts = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        another_key = await h.post(forged, auth=h.fake.sign(key=not_microsofts))
        statuses = {r.status for r in (unsigned, wrong, another_bot, stale, another_key)}
        assert statuses == {401}
        elsewhere = await click(h, "approve", approval_id, conversation="19:other@thread.v2")
        unknown = await click(h, "approve", "a-unknown")
        assert elsewhere["type"] == unknown["type"] == "application/vnd.microsoft.activity.message"
        refreshed_elsewhere = await h.post(
            h.invoke(
                "adaptiveCard/action",
                {
                    "action": {
                        "type": "Action.Execute",
                        "verb": "threadline.approval.refresh",
                        "data": {"threadline_approval": approval_id},
                    }
                },
                kind="groupChat",
                conversation="19:other@thread.v2",
            )
        )
        assert await refreshed_elsewhere.text() in ("", "null")  # no card to another chat
        assert refund.runs == []
        await click(h, "approve", approval_id)
        assert refund.runs == [42]


async def test_a_refresh_shows_the_card_as_it_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    async with approving_bot(monkeypatch) as (h, _):
        approval_id, _ = await ask(h)
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": "threadline.approval.refresh",
                "data": {"threadline_approval": approval_id},
            }
        }
        pending = await (
            await h.post(h.invoke("adaptiveCard/action", value, kind="groupChat"))
        ).json()
        assert [a["title"] for a in pending["value"]["actions"]] == ["Approve", "Deny", "Stop"]
        await click(h, "approve", approval_id)
        decided = await (
            await h.post(h.invoke("adaptiveCard/action", value, kind="groupChat"))
        ).json()
        assert "actions" not in decided["value"]


async def test_arguments_carrying_card_markup_are_shown_inert(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with approving_bot(monkeypatch, refund_script(note=ATTACK)) as (h, refund):
        approval_id, _ = await ask(h)
        response = await click(h, "approve", approval_id)
        sent = [c.body for c in h.fake.calls if isinstance(c.body, dict)]
        assert [p for body in sent for p in teams_problems(body)] == []
        assert (
            teams_problems(
                {
                    "type": "message",
                    "attachments": [
                        {
                            "contentType": "application/vnd.microsoft.card.adaptive",
                            "content": response["value"],
                        }
                    ],
                }
            )
            == []
        )
        assert refund.runs == [42]


# --- the state goes away while it waits -------------------------------------------------------


@pytest.mark.redis
@pytest.mark.skipif(not redis_available(), reason="redis-server not installed")
async def test_a_state_outage_while_waiting_loses_no_decision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = RedisServer(tmp_path / "redis", persistent=True)
    server.start()
    state = build_state(StateSettings(redis_url=server.url))
    try:
        async with approving_bot(monkeypatch, state=state) as (h, refund):
            approval_id, _ = await ask(h)
            server.stop()
            told = await click(h, "approve", approval_id)
            assert "temporarily unavailable" in told["value"]
            assert refund.runs == []
            server.start()
            decided = await click(h, "approve", approval_id)
            assert "Approved by Ana Lima" in json.dumps(decided["value"])
            assert refund.runs == [42]
    finally:
        await state.aclose()
        server.stop()
