"""``/home`` in Teams, through the real Teams bot (issue 40): the same home as Slack's Home tab,
as one Adaptive Card in the 1:1 chat, whose buttons work as the commands typed in chat."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.bots.teams.harness import ADMIN, TeamsHarness, teams_bot
from tests.bots.teams.test_approvals import (
    BO,
    NAMES,
    answers_text,
    approving_bot,
    ask,
    updates_of,
)


async def say(bot: TeamsHarness, text: str, **kwargs: Any) -> None:
    assert (await bot.post(bot.message(text, **kwargs))).status in (200, 201)
    await bot.host.idle()


def actions_of(card: dict[str, Any]) -> dict[str, str]:
    """Every button of the card: title -> the command it sends."""
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if node.get("type") in ("Action.Execute", "Action.Submit") and isinstance(data, dict):
                found[str(node.get("title"))] = str(data.get("threadline_action"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(card)
    return found


async def home_card(bot: TeamsHarness, **kwargs: Any) -> dict[str, Any]:
    before = len(bot.fake.calls)
    await say(bot, "/home", **kwargs)
    sent = [c for c in bot.fake.calls[before:] if c.activity_type == "message" and c.status < 300]
    [card] = [card for call in sent for card in cards_in(call.body)]
    return card


async def test_home_shows_the_persons_schedules_and_its_pause_button_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch, []) as bot:
        await say(bot, "/schedule every weekday 9:00 revenue yesterday")
        [schedule] = await bot.host.schedules.store.every()
        card = await home_card(bot)
        assert_valid_card(card)
        assert schedule.id in json.dumps(card) and "revenue yesterday" in json.dumps(card)
        pause = actions_of(card)["Pause"]
        assert pause == f"/schedule pause {schedule.id}"
        assert bot.llm.requests == []  # the home is not a question to the model

        value = {"action": {"verb": "threadline.action", "data": {"threadline_action": pause}}}
        await bot.post(bot.invoke("adaptiveCard/action", value))
        await bot.host.idle()
        [schedule] = await bot.host.schedules.store.every()
        assert schedule.status == "paused"
        assert actions_of(await home_card(bot))["Resume"] == f"/schedule resume {schedule.id}"


async def test_another_persons_click_changes_nothing_and_home_is_never_shown_to_a_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch, []) as bot:
        await say(bot, "/schedule every weekday 9:00 revenue yesterday")
        [schedule] = await bot.host.schedules.store.every()
        forged = {
            "action": {
                "verb": "threadline.action",
                "data": {"threadline_action": f"/schedule remove {schedule.id}"},
            }
        }
        await bot.post(bot.invoke("adaptiveCard/action", forged, user="aad-bo", user_name="Bo"))
        await bot.host.idle()
        assert [s.status for s in await bot.host.schedules.store.every()] == ["active"]

        card = await home_card(bot, kind="groupChat")
        assert_valid_card(card)
        assert schedule.id not in json.dumps(card) and "1:1 chat" in json.dumps(card)


async def test_run_now_on_the_home_card_runs_it_once_and_a_forged_click_runs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run now (issue 40), the twin of Slack's: the schedule's question is asked now as its
    owner and posted where it posts, its next run unchanged; Bo's click of it runs nothing."""
    async with teams_bot(monkeypatch, ["Revenue yesterday: 1,234 EUR."]) as bot:
        await say(bot, "/schedule every weekday 9:00 revenue yesterday")
        [before] = await bot.host.schedules.store.every()
        run = actions_of(await home_card(bot))["Run now"]
        assert run == f"/schedule run {before.id}"
        value = {"action": {"verb": "threadline.action", "data": {"threadline_action": run}}}

        await bot.post(bot.invoke("adaptiveCard/action", value, user="aad-bo", user_name="Bo"))
        await bot.host.idle()
        assert bot.llm.requests == []
        assert not any("Scheduled by" in json.dumps(c.body or {}) for c in bot.fake.calls)

        await bot.post(bot.invoke("adaptiveCard/action", value))
        await bot.host.idle()
        [question] = bot.llm.requests
        assert "revenue yesterday" in json.dumps(question.messages[-1].content)
        sent = [json.dumps(c.body or {}) for c in bot.fake.calls if c.status < 300]
        assert any("Scheduled by" in text for text in sent)
        assert any("1,234 EUR" in text for text in sent)
        [after] = await bot.host.schedules.store.every()
        assert after.next_due == before.next_due


async def test_home_card_lists_approvals_one_may_decide_and_approve_decides_as_the_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pending approvals on ``/home`` (issue 40, the twin of Slack's Home): Alex (an admin)
    sees Bo's refund with Approve and Deny, Ana does not, and her forged Approve decides
    nothing; Alex's Approve is the approval card's own decision (the card in Bo's chat is
    updated, the tool runs once, the turn goes on there)."""
    async with approving_bot(monkeypatch, approvers=["asker", "admin"]) as (bot, refund):
        approval_id, message_id = await ask(bot, user=BO)
        card = await home_card(bot, user=ADMIN, user_name=NAMES[ADMIN])
        assert_valid_card(card)
        buttons = actions_of(card)
        assert buttons["Approve"] == f"/approve {approval_id}"
        assert buttons["Deny"] == f"/deny {approval_id}"
        assert "Approve" not in actions_of(await home_card(bot))  # Ana's home

        value = {
            "action": {
                "verb": "threadline.action",
                "data": {"threadline_action": f"/approve {approval_id}"},
            }
        }
        await bot.post(bot.invoke("adaptiveCard/action", value))  # Ana, forged
        await bot.host.idle()
        assert refund.runs == [] and updates_of(bot, message_id) == []
        assert "may approve this" in answers_text(bot)

        await bot.post(bot.invoke("adaptiveCard/action", value, user=ADMIN, user_name="Alex"))
        await bot.host.idle()
        assert refund.runs == [42]
        [updated] = updates_of(bot, message_id)
        assert "Approved by Alex Admin" in json.dumps(updated)
        assert "Refunded." in answers_text(bot)


async def test_the_home_card_refreshes_to_the_home_as_it_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept current the Teams way (issue 40, the twin of Slack's republished tab): the card
    carries a refresh; after an admin pauses Ana's schedule, the refresh Teams sends when
    Ana views the card answers her home as it stands (Resume). A refresh in a group chat
    answers no home."""
    async with teams_bot(monkeypatch, []) as bot:
        await say(bot, "/schedule every weekday 9:00 revenue yesterday")
        [schedule] = await bot.host.schedules.store.every()
        card = await home_card(bot)
        assert card["refresh"]["action"] == {
            "type": "Action.Execute",
            "title": "Refresh",
            "verb": "threadline.home",
        }
        assert "Pause" in actions_of(card)
        await say(bot, f"/schedule pause {schedule.id}", user=ADMIN, user_name="Alex")
        assert [s.status for s in await bot.host.schedules.store.every()] == ["paused"]

        refresh = {"action": {"type": "Action.Execute", "verb": "threadline.home"}}
        response = await bot.post(bot.invoke("adaptiveCard/action", refresh))
        assert response.status == 200
        answered = await response.json()
        assert answered["type"] == "application/vnd.microsoft.card.adaptive"
        assert_valid_card(answered["value"])
        assert actions_of(answered["value"])["Resume"] == f"/schedule resume {schedule.id}"

        in_a_room = await bot.post(bot.invoke("adaptiveCard/action", refresh, kind="groupChat"))
        assert in_a_room.status == 200
        assert schedule.id not in await in_a_room.text()
