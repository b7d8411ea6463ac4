"""Approval in the console (issue 25): the demo's ``refund_order`` waits for a click; both
channels show their approval message (the adapters' own), the persona switch decides who
clicks, and the decision updates both in place before the turn goes on."""

from __future__ import annotations

import json
from typing import Any

from tests.dev.conftest import ALEX, ANA, Console, TurnEvents, persona

BO = {"user_id": "U0BO", "name": "Bo", "groups": ["user"], "place": "dm"}
CARD = "application/vnd.microsoft.card.adaptive"


def approval_of(events: TurnEvents) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The approval's id, its Slack message and its Teams card, as the turn posted them."""
    [slack] = [
        m
        for m in events.slack_messages().values()
        if "threadline_approval:approve" in json.dumps(m["blocks"])
    ]
    [teams] = [
        t
        for t in events.teams_activities()
        if "threadline.approval" in json.dumps(t["activity"].get("attachments") or [])
    ]
    approval_id = next(
        e["value"] for b in slack["blocks"] for e in b.get("elements") or [] if "value" in e
    )
    return approval_id, slack, teams


def updated(events: TurnEvents) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    slack = [e["message"] for e in events.of("slack") if e["op"] == "update"]
    teams = [e["activity"] for e in events.teams_activities() if e["op"] == "update"]
    return slack, teams


async def test_a_refund_waits_in_both_channels_and_the_asker_approves(console: Console) -> None:
    asked = await console.ask("Refund order 11, it arrived broken")
    assert asked.outcome == "done"
    approval_id, slack, teams = approval_of(asked)
    assert "Waiting for approval" in json.dumps(slack["blocks"])
    card = teams["activity"]["attachments"][0]
    assert card["contentType"] == CARD and "Approve" in json.dumps(card["content"]["actions"])
    assert "Waiting for approval" in json.dumps(
        [c["rich_component"] for c in asked.of("component")]
    )

    clicked = await console.click(approval_id, "approve")
    assert clicked.of("approval")[0]["decided"] is True
    slack_updates, teams_updates = updated(clicked)
    assert "Approved by Ana" in json.dumps(slack_updates[0]["blocks"])
    assert "Approved by Ana" in json.dumps(teams_updates[0])
    assert "Refunded order 11" in json.dumps(clicked.components("text"))
    assert clicked.outcome == "done"


async def test_the_persona_switch_decides_who_clicks(console: Console) -> None:
    asked = await console.ask("Refund order 12", persona(ANA, "channel"))
    approval_id, _, _ = approval_of(asked)
    refused = await console.click(approval_id, "approve", persona(BO, "channel"))
    [said] = refused.of("approval")
    assert not said["decided"] and said["message"] == "Only Ana or an admin may approve this."
    private = [m for m in refused.slack_messages().values() if m["ephemeral_to"]]
    assert [m["ephemeral_to"] for m in private] == ["U0BO"]
    assert updated(refused) == ([], [])
    teams_refusal = await console.click(
        approval_id, "approve", persona(BO, "channel"), channel="teams"
    )
    assert teams_refusal.of("approval")[0]["channel"] == "teams"
    denied = await console.click(approval_id, "deny", persona(ANA, "channel"))
    assert "Denied by Ana" in json.dumps(updated(denied)[0])
    assert "I did not refund order 12" in json.dumps(denied.components("text"))


async def test_an_admin_approves_an_others_refund(console: Console) -> None:
    asked = await console.ask("Refund order 16", persona(ANA, "channel"))
    approval_id, _, _ = approval_of(asked)
    clicked = await console.click(approval_id, "approve", persona(ALEX, "channel"), channel="teams")
    assert "Approved by Alex" in json.dumps(updated(clicked)[1])
    assert "Refunded order 16" in json.dumps(clicked.components("text"))


async def test_stop_while_waiting_and_a_click_after_it(console: Console) -> None:
    asked = await console.ask("Refund order 13", persona(ALEX, "dm"))
    approval_id, _, _ = approval_of(asked)
    stopped = await console.click(approval_id, "stop", persona(ALEX, "dm"), channel="teams")
    slack_updates, teams_updates = updated(stopped)
    assert "Stopped by Alex" in json.dumps(slack_updates) + json.dumps(teams_updates)
    assert "nothing to add" not in json.dumps(stopped.teams_activities())
    late = await console.click(approval_id, "approve", persona(ALEX, "dm"))
    assert late.of("approval")[0]["reason"] == "already"
    assert not late.components("text")


async def test_a_newer_message_supersedes_a_pending_approval(console: Console) -> None:
    asked = await console.ask("Refund order 14")
    approval_id, _, _ = approval_of(asked)
    newer = await console.ask("Who are our top customers by revenue?")
    slack_updates, teams_updates = updated(newer)
    superseded = "Expired: a newer message came before anyone decided"
    assert superseded in json.dumps([m["blocks"] for m in slack_updates])
    assert superseded in json.dumps(teams_updates)
    late = await console.click(approval_id, "approve")
    assert late.of("approval")[0]["reason"] == "already"


async def test_unknown_and_misplaced_clicks_decide_nothing(console: Console) -> None:
    asked = await console.ask("Refund order 15")
    approval_id, _, _ = approval_of(asked)
    unknown = await console.click("a0unknown", "approve")
    elsewhere = await console.click(approval_id, "approve", thread="1700000000.000999")
    reasons = [e.of("approval")[0]["reason"] for e in (unknown, elsewhere)]
    assert reasons == ["unknown", "elsewhere"]
    assert updated(unknown) == updated(elsewhere) == ([], [])
    assert not unknown.components("text") and not elsewhere.components("text")
    approved = await console.click(approval_id, "approve")
    assert "Refunded order 15" in json.dumps(approved.components("text"))
