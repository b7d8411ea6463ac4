"""The organisation's edge through the real Teams bot (issue 35): guests, people of another
tenant, anonymous meeting attendees, a roster that does not answer, and channels read by
another organisation.

Driven like Teams drives the bot: signed activities into ``/api/messages``, the shipped
``FakeBotConnector`` (roster included) behind botbuilder's real client, a scripted Claude.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.notices import SHARED_PRIVATELY
from agent_core import ScriptedResponse
from agent_core.schedules.testing import ManualClock
from agent_core.users import OUTSIDER_REFUSAL
from bots.teams.settings import TeamsSettings
from tests.adapters.teams import payloads
from tests.bots.teams.harness import MEMBER, TeamsHarness, teams_bot
from tests.bots.teams.test_approvals import NAMES, approving_bot, ask, click
from tests.bots.teams.test_schedules import FRIDAY_NOON, scheduling_bot

ROWS = [ScriptedResponse.tool("run_sql", {"sql": "select * from customers"}), "Here they are."]
OTHER_TENANT = "0f0f0f0f-0000-4000-8000-0000000000ff"


def person(bot: TeamsHarness, aad: str, **fields: Any) -> None:
    """A roster entry; ``fields`` override the member's (``tenantId``, ``userRole``...)."""
    bot.fake.members[f"29:{aad}"] = {
        **bot.fake.members[f"29:{MEMBER}"],
        "id": f"29:{aad}",
        "aadObjectId": aad,
        "name": aad,
        "email": f"{aad}@elsewhere.example",
        "userPrincipalName": f"{aad}@elsewhere.example",
        **fields,
    }


def everything(bot: TeamsHarness) -> str:
    return json.dumps([c.body for c in bot.fake.calls], default=str)


def asked(bot: TeamsHarness) -> int:
    return len(bot.llm.requests)


async def settle(bot: TeamsHarness) -> None:
    await bot.host.idle(timeout=20)


async def test_a_teams_guest_gets_no_member_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack 3: with ``TEAMS_DEFAULT_GROUPS=user``, a person whose roster entry says
    ``userRole: "guest"`` got ``user`` and ran ``run_sql``."""
    async with teams_bot(monkeypatch, ROWS) as bot:
        person(bot, "aad-guest", userRole="guest")
        await bot.post(bot.message("which customers?", user="aad-guest"))
        await settle(bot)
        assert "customer 0" not in everything(bot)  # run_sql was not theirs to run


async def test_a_member_of_another_tenant_gets_no_member_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack 4: in a channel, a person whose roster ``tenantId`` (and ``from.tenantId``) is
    another tenant got ``user``: the identity was keyed on the conversation's tenant and
    default groups went to any tenant."""
    async with teams_bot(monkeypatch, ROWS) as bot:
        person(bot, "aad-x", tenantId=OTHER_TENANT)
        asking = bot.message("which customers?", kind="channel", user="aad-x")
        asking["from"]["tenantId"] = OTHER_TENANT
        await bot.post(asking)
        await settle(bot)
        assert asked(bot) == 0 and "customer 0" not in everything(bot)
        assert OUTSIDER_REFUSAL in everything(bot)


async def test_an_anonymous_meeting_attendee_gets_one_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch, ROWS, external_groups=["user"]) as bot:
        person(bot, "aad-anon", userRole="anonymous")
        await bot.post(bot.message("which customers?", kind="groupChat", user="aad-anon"))
        await settle(bot)
        assert asked(bot) == 0  # not even external_groups: anonymous is nothing at all
        told = [
            c
            for c in bot.fake.calls
            if c.operation != "update_activity" and OUTSIDER_REFUSAL in json.dumps(c.body)
        ]
        assert len(told) == 1, [(c.operation, c.body) for c in told]  # one message


async def test_a_roster_that_times_out_fails_closed_until_it_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad input: the roster does not answer in time; the person is external (nothing
    runs), and that is not remembered once the roster answers again."""
    async with teams_bot(monkeypatch, [*ROWS], roster_timeout=0.2) as bot:
        bot.fake.slow["get_conversation_member"] = 2.0
        await bot.post(bot.message("which customers?", user=MEMBER))
        await settle(bot)
        assert asked(bot) == 0 and OUTSIDER_REFUSAL in everything(bot)
        del bot.fake.slow["get_conversation_member"]
        await bot.post(bot.message("which customers?", user=MEMBER))
        await settle(bot)
        assert asked(bot) == 2 and "customer 0" in everything(bot)


async def test_a_channel_with_a_member_of_another_tenant_answers_privately(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An employee's answer in a channel another organisation reads reaches them alone (a
    targeted message or a 1:1 chat); the channel reads one line."""
    async with teams_bot(monkeypatch, ROWS) as bot:
        person(bot, "aad-x", tenantId=OTHER_TENANT)
        await bot.post(bot.message("hello?", kind="channel", user="aad-x"))  # refused
        await settle(bot)
        asking = bot.message("which customers?", kind="channel", user=MEMBER)
        room = asking["conversation"]["id"]
        await bot.post(asking)
        await settle(bot)
        carrying = [c for c in bot.fake.calls if "customer 0" in json.dumps(c.body)]
        assert carrying and all(
            c.operation == "send_targeted" or c.conversation_id != room for c in carrying
        ), [(c.operation, c.conversation_id) for c in carrying]
        assert SHARED_PRIVATELY in everything(bot)


GENERAL = "19:general@thread.tacv2"
"""The channel of ``message(kind="channel")``: its roster is read by this id."""


def answered_in_place(bot: TeamsHarness, room: str) -> bool:
    """The rows reached the channel itself (not a targeted message, not a 1:1 chat)."""
    return any(
        "customer 0" in json.dumps(c.body)
        and c.conversation_id == room
        and c.operation != "send_targeted"
        for c in bot.fake.calls
    )


def only_the_asker_saw_rows(bot: TeamsHarness, room: str) -> bool:
    carrying = [c for c in bot.fake.calls if "customer 0" in json.dumps(c.body)]
    return bool(carrying) and all(
        c.operation == "send_targeted" or c.conversation_id != room for c in carrying
    )


async def ask_in_general(bot: TeamsHarness) -> str:
    asking = bot.message("which customers?", kind="channel", user=MEMBER)
    await bot.post(asking)
    await settle(bot)
    return str(asking["conversation"]["id"])


async def test_a_channel_with_a_silent_member_of_another_tenant_answers_privately_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A channel was known to be shared only once a person of another tenant spoke or was
    seen joining: the first answers there, rows included, were posted where that person,
    who had never said a word, read them. The roster is read before the first answer."""
    async with teams_bot(monkeypatch, ROWS) as bot:
        person(bot, "aad-x", tenantId=OTHER_TENANT)  # in the roster, never spoke
        room = await ask_in_general(bot)
        assert only_the_asker_saw_rows(bot, room)
        assert SHARED_PRIVATELY in everything(bot)
        assert not answered_in_place(bot, room)


async def test_a_roster_that_fails_or_is_too_long_to_read_answers_privately(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad input: the channel's roster cannot be read (an error), or not whole within the
    bound (``TEAMS_ROSTER_PAGES``): who reads the channel is unknown, so it counts as shared
    (fail closed)."""
    async with teams_bot(monkeypatch, [*ROWS, *ROWS], roster_pages=1) as bot:
        bot.fake.fail("get_conversation_paged_members", 403)
        room = await ask_in_general(bot)
        assert only_the_asker_saw_rows(bot, room) and not answered_in_place(bot, room)
        changed = {"type": "conversationUpdate", "conversation": {"id": GENERAL}}
        await bot.host.places.handle_event(payloads.TENANT, changed)  # to be read again
        bot.fake.rosters[GENERAL] = [f"29:{MEMBER}", *(f"29:aad-{n}" for n in range(600))]
        await ask_in_general(bot)  # two pages of 500; one is read
        assert not answered_in_place(bot, room)
        assert bot.fake.operations().count("get_conversation_paged_members") == 2


async def test_a_roster_that_times_out_answers_privately(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad input: the channel's roster does not answer within ``TEAMS_ROSTER_TIMEOUT``."""
    async with teams_bot(monkeypatch, ROWS, roster_timeout=0.3) as bot:
        bot.fake.slow["get_conversation_paged_members"] = 2.0
        room = await ask_in_general(bot)
        assert only_the_asker_saw_rows(bot, room) and not answered_in_place(bot, room)


async def test_a_member_of_another_tenant_on_the_rosters_second_page_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The roster is read page by page (its continuation token): the outsider listed after
    the first 500 members still makes the answer private."""
    async with teams_bot(monkeypatch, ROWS, roster_pages=2) as bot:
        person(bot, "aad-x", tenantId=OTHER_TENANT)
        filler = [f"29:aad-{n}" for n in range(500)]  # not in the roster: skipped by the fake
        bot.fake.rosters[GENERAL] = [f"29:{MEMBER}", *filler, "29:aad-x"]
        room = await ask_in_general(bot)
        assert only_the_asker_saw_rows(bot, room) and not answered_in_place(bot, room)
        pages = [c for c in bot.fake.calls if c.operation == "get_conversation_paged_members"]
        assert [c.query.get("continuationToken") for c in pages] == [None, "500"]


async def test_an_internal_channel_is_answered_in_place_and_a_member_added_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Everyone in the roster is of the organisation's tenant: answered in the channel,
    the roster read once. Then Teams says someone was added (``membersAdded`` carries no
    tenant): the next answer reads the roster again and finds them."""
    async with teams_bot(monkeypatch, [*ROWS, *ROWS, *ROWS]) as bot:
        room = await ask_in_general(bot)
        assert answered_in_place(bot, room)
        await ask_in_general(bot)
        assert bot.fake.operations().count("get_conversation_paged_members") == 1
        person(bot, "aad-x", tenantId=OTHER_TENANT)
        added = bot.message("", kind="channel", user=MEMBER)
        added.update(type="conversationUpdate", membersAdded=[{"id": "29:aad-x"}])
        added["conversation"]["id"] = GENERAL
        await bot.post(added)
        before = [c for c in bot.fake.calls if "customer 0" in json.dumps(c.body)]
        await ask_in_general(bot)
        after = [c for c in bot.fake.calls if "customer 0" in json.dumps(c.body)]
        assert after[len(before) :] and all(
            c.operation == "send_targeted" or c.conversation_id != room
            for c in after[len(before) :]
        )


async def test_an_external_persons_schedule_saves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teams' twin of the Slack case: a person of another tenant's ``/schedule`` saved a
    schedule that would run as them, with the members' groups they got before the fix."""
    async with scheduling_bot(monkeypatch, clock=ManualClock.at(FRIDAY_NOON)) as bot:
        person(bot.harness, "aad-x", tenantId=OTHER_TENANT)
        activity = bot.harness.message(
            "/schedule every weekday 9:00 revenue", kind="groupChat", user="aad-x"
        )
        activity["from"]["tenantId"] = OTHER_TENANT
        await bot.harness.post(activity)
        await bot.harness.host.idle()
        assert await bot.harness.host.schedules.store.every() == []
        told = [c for c in bot.fake.calls if OUTSIDER_REFUSAL in json.dumps(c.body)]
        assert len(told) == 1, [(c.operation, c.body) for c in told]  # the one sentence


def test_default_groups_without_a_known_tenant_are_a_start_up_problem() -> None:
    """``default_groups`` went to "every user of an allowed tenant" where an empty list of
    tenants meant any tenant; now the configuration does not start."""
    with pytest.raises(ValidationError, match="TEAMS_DEFAULT_GROUPS needs"):
        TeamsSettings(default_groups=["user"])
    assert TeamsSettings(default_groups=["user"], allowed_tenants=["t1"]).home_tenants == ["t1"]


async def test_an_external_persons_approve_click_decides_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teams' twin of the Slack case: approvers include ``user``, which a person of another
    tenant got before the fix; their Approve now decides nothing."""
    async with approving_bot(monkeypatch, approvers=["user"]) as (h, refund):
        approval_id, _ = await ask(h)
        person(h, "aad-x", tenantId=OTHER_TENANT)
        monkeypatch.setitem(NAMES, "aad-x", "Xe")
        await click(h, "approve", approval_id, user="aad-x")
        assert refund.runs == []
        await click(h, "approve", approval_id)  # a member still can
        assert refund.runs == [42]
