"""The organisation's edge through the real Slack bot (issue 35): people of another
organisation, Slack Connect channels, Grid workspaces, and the signals that fail.

Driven like Slack drives the bot: signed events into its HTTP endpoint, the shipped
``FakeSlackApi`` behind the real ``slack_sdk`` client, a scripted Claude.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.notices import SHARED_PRIVATELY, SHARED_REFUSED
from adapters.slack.testing import FakeSlackApi
from agent_core import InMemoryAuditLogger, ScriptedResponse
from agent_core.audit import AuditEventType
from agent_core.schedules.testing import ManualClock
from agent_core.users import OUTSIDER_REFUSAL
from tests.bots.approval_kit import refund_script
from tests.bots.slack.harness import SlackHarness, running_bot
from tests.bots.slack.test_approvals import approving_bot, ask, click
from tests.bots.slack.test_schedules import (
    FRIDAY_NOON,
    MONDAY_9,
    markers,
    private_text,
    scheduling_bot,
)

ROWS = [ScriptedResponse.tool("run_sql", {"sql": "select * from accounts"}), "Here they are."]
SHARED = {"is_ext_shared_channel": True}


def mention(ts: str, *, user: str = "U1", user_team: str | None = "T1", channel: str = "C1"):
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": user,
        "text": "<@UBOT> which accounts are there?",
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
    }
    if user_team is not None:
        event["user_team"] = user_team
    return event


def outsider(fake: FakeSlackApi, user: str = "UX", team: str = "T9", **extra: Any) -> None:
    """A person of another organisation, as ``users.info`` describes them (not restricted,
    not a stranger: a full member of their own workspace)."""
    fake.users[user] = {"id": user, "team_id": team, "profile": {"display_name": "Xe"}, **extra}


def public(h: SlackHarness, channel: str = "C1") -> str:
    """Everything everyone in ``channel`` can read (ephemeral messages left out)."""
    shown = [
        (m.text, m.blocks, m.chunks, m.files)
        for m in h.fake.messages
        if m.channel == channel and m.ephemeral_to is None and not m.deleted
    ]
    return json.dumps(shown, default=str)


def private_to(h: SlackHarness, user: str) -> str:
    calls = h.fake.calls_to("chat.postEphemeral")
    return json.dumps([c.args for c in calls if c.args.get("user") == user], default=str)


def asked(h: SlackHarness) -> int:
    return len(h.agent.llm_service.requests)  # type: ignore[attr-defined]


async def test_a_member_of_another_organisation_runs_nothing_and_sees_no_rows(
    tmp_path: Path,
) -> None:
    """Attack 1: in a Slack Connect channel, a person whose ``users.info`` says ``team_id``
    of another organisation (not restricted, not a stranger) got the ``user`` group:
    ``run_sql`` ran for them and the rows were posted."""
    audit = InMemoryAuditLogger()
    async with running_bot(tmp_path, ROWS, audit=audit) as h:
        outsider(h.fake)
        await h.event(mention("300.0", user="UX", user_team="T9"), envelope=SHARED)
        await h.idle()
        assert asked(h) == 0  # nothing ran: no model, no tool
        [refused] = audit.of_type(AuditEventType.OUTSIDER_REFUSED)  # naming their organisation
        assert (refused.user_organisation, refused.user_groups) == ("T9", ["external"])
        assert "row 0" not in json.dumps([c.args for c in h.fake.calls], default=str)
        # one sentence, in the thread (to them alone: the channel is shared)
        assert OUTSIDER_REFUSAL in private_to(h, "UX")


async def test_an_employees_answer_in_a_slack_connect_channel_reaches_only_them(
    tmp_path: Path,
) -> None:
    """Attack 2: an employee asking in a Slack Connect channel got the query's rows posted in
    the channel (``chat.postMessage``), where every member of the other organisation reads
    them."""
    async with running_bot(tmp_path, ROWS) as h:
        h.fake.channels["C1"] = {"is_ext_shared": True}
        await h.event(mention("310.0"), envelope=SHARED)
        await h.idle()
        assert "row 0" not in public(h) and "Here they are" not in public(h)
        assert SHARED_PRIVATELY in public(h)  # the place reads one line
        assert "Here they are" in private_to(h, "U1")
        assert "row 0" in private_to(h, "U1") or "Query result" in private_to(h, "U1")


async def test_a_public_ask_in_a_shared_channel_does_not_echo_the_question(
    tmp_path: Path,
) -> None:
    """A public ``/ask`` in a Slack Connect channel first posted "<@U1> asked: <the
    question>" in the channel, where the other organisation read the question, before the
    answer went to the asker alone. The place reads only the one line."""
    question = "which accounts of Globex are overdue?"
    async with running_bot(tmp_path, ROWS) as h:
        h.fake.channels["C1"] = {"is_ext_shared": True}
        await h.command(question)
        await h.idle()
        assert "Globex" not in public(h) and "Here they are" not in public(h)
        assert public(h).count(SHARED_PRIVATELY) == 1  # one line, not one per message
        assert "Here they are" in private_to(h, "U1")
        [opener] = [m for m in h.fake.messages if m.channel == "C1" and m.ephemeral_to is None]
        assert all(
            c.args.get("thread_ts") == opener.ts for c in h.fake.calls_to("chat.postEphemeral")
        )


async def test_a_refused_ask_in_a_shared_channel_does_not_echo_the_question(
    tmp_path: Path,
) -> None:
    """``shared_places = "refuse"``: the public ``/ask`` still posted the question in the
    channel the other organisation reads, then refused."""
    async with running_bot(tmp_path, ROWS, shared_places="refuse") as h:
        h.fake.channels["C1"] = {"is_ext_shared": True}
        await h.command("which accounts of Globex are overdue?")
        await h.idle()
        assert asked(h) == 0 and "Globex" not in public(h)
        assert public(h).count(SHARED_REFUSED) == 1


async def test_a_public_ask_in_an_internal_channel_still_opens_its_thread_with_the_question(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ROWS) as h:
        h.fake.channels["C1"] = {"is_ext_shared": False}
        await h.command("which accounts are overdue?")
        await h.idle()
        assert "<@U1> asked: which accounts are overdue?" in public(h)
        assert "Here they are" in public(h)


async def test_a_pending_invitation_or_conversations_info_alone_makes_the_answer_private(
    tmp_path: Path,
) -> None:
    """A slash command carries no envelope: ``conversations.info`` says the channel is being
    shared (``is_pending_ext_shared``), which is already an outside audience."""
    async with running_bot(tmp_path, ROWS) as h:
        h.fake.channels["C1"] = {"is_pending_ext_shared": True}
        await h.event(mention("315.0"))  # no is_ext_shared_channel in the envelope
        await h.idle()
        assert "Here they are" not in public(h) and "Here they are" in private_to(h, "U1")


async def test_channel_shared_makes_the_next_answer_private(tmp_path: Path) -> None:
    """The bot knew C1 as internal (cached): ``channel_shared`` must take effect at once."""
    async with running_bot(tmp_path, [*ROWS, *ROWS]) as h:
        await h.event(mention("320.0"))
        await h.idle()
        assert "Here they are" in public(h)  # an ordinary channel: answered in it
        await h.event({"type": "channel_shared", "channel": "C1", "connected_team_id": "T9"})
        before = public(h)
        await h.event(mention("321.0"))
        await h.idle()
        assert public(h).count("Here they are") == before.count("Here they are")
        assert SHARED_PRIVATELY in public(h) and "Here they are" in private_to(h, "U1")
        await h.event({"type": "channel_unshared", "channel": "C1", "is_ext_shared": False})
        assert await h.bot.places.cached("T1", "C1") is False


async def test_a_grid_person_of_another_workspace_keeps_their_groups(tmp_path: Path) -> None:
    """Enterprise Grid: a person whose own workspace is another of the same organisation
    belongs; a Grid person without ``enterprise_user`` is external until known."""
    async with FakeSlackApi(enterprise_id="E1") as fake:
        async with running_bot(tmp_path, ROWS, fake=fake) as h:
            outsider(h.fake, "UG", "T2", enterprise_user={"enterprise_id": "E1", "id": "UG"})
            await h.event(mention("330.0", user="UG", user_team="T2"))
            await h.idle()
            assert asked(h) == 2 and "Here they are" in public(h)
            outsider(h.fake, "UN", "T2")  # no enterprise_user: not known to be of the Grid
            await h.event(mention("331.0", user="UN", user_team="T2"))
            await h.idle()
            assert asked(h) == 2 and OUTSIDER_REFUSAL in public(h)


async def test_missing_or_contradicting_signals_mean_external(tmp_path: Path) -> None:
    """Bad input: an event of a shared channel without ``user_team``, and one whose
    ``user_team`` says another organisation while ``users.info`` says ours."""
    async with running_bot(tmp_path, ROWS) as h:
        await h.event(mention("340.0", user_team=None), envelope=SHARED)
        await h.idle()
        assert asked(h) == 0 and OUTSIDER_REFUSAL in private_to(h, "U1")
        await h.event(mention("341.0", user_team="T9"))
        await h.idle()
        assert asked(h) == 0


async def test_an_external_persons_approve_click_decides_nothing(tmp_path: Path) -> None:
    """An external person's click on Approve (approvers: the ``user`` group, which they got
    before the fix) decided the approval and ran the tool."""
    async with approving_bot(tmp_path, refund_script(), approvers=["user"]) as (h, refund):
        outsider(h.fake)
        message = await ask(h, user="U1")
        await click(h, "approve", message, user="UX")
        assert refund.runs == []
        await click(h, "approve", message, user="U2")  # a member still can
        assert refund.runs == [42]


async def test_an_external_persons_schedule_saves_nothing(tmp_path: Path) -> None:
    """An external person's ``/schedule`` saved a schedule that would run as them."""
    async with running_bot(tmp_path, ROWS) as h:
        outsider(h.fake)
        await h.command("every weekday 9:00 revenue", user="UX", command="/schedule")
        await h.idle()
        assert await h.bot.schedules.store.every() == []
        assert OUTSIDER_REFUSAL in json.dumps([c.args for c in h.fake.calls], default=str)


async def test_external_groups_grant_people_of_other_organisations_what_they_name(
    tmp_path: Path,
) -> None:
    """``external_groups`` grants like any group: here the tools' own ``user`` group."""
    async with running_bot(tmp_path, ROWS, external_groups=["user"]) as h:
        outsider(h.fake)
        await h.event(mention("350.0", user="UX", user_team="T9"))
        await h.idle()
        assert asked(h) == 2 and "Here they are" in public(h)


async def test_a_schedule_whose_channel_became_shared_answers_its_owner_privately(
    tmp_path: Path,
) -> None:
    """A schedule made in an internal channel kept posting its answers there after the
    channel was shared with another organisation."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue yesterday by region")
        await bot.harness.event({"type": "channel_shared", "channel": "C1"})
        assert (await bot.at(MONDAY_9)).enqueued == 1
        assert markers(bot.fake) == []  # nothing in the shared channel
        shown = [m for m in bot.fake.messages if m.channel == "C1" and m.ephemeral_to is None]
        assert not any("1,234 EUR" in (m.text or "") for m in shown)
        told = " ".join(private_text(bot.fake))
        assert "1,234 EUR" in told and "shared with people outside" in told


async def test_status_shows_the_policy_and_the_home_workspace(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Hi."], shared_places_allowed=["C0PARTNER"]) as h:
        await h.event({**mention("360.0", user="UADMIN"), "text": "<@UBOT> /status"})
        await h.idle()
        shown = json.dumps([c.args for c in h.fake.calls], default=str)
        assert "Shared places: private (allowed: C0PARTNER)" in shown
        assert "Organisation: workspace T1" in shown


async def test_a_single_channel_guest_keeps_guest_and_gets_no_data(tmp_path: Path) -> None:
    """Slack's own guests (``is_ultra_restricted``) of the workspace are not external: they
    keep ``guest``, which no tool grants, so no rows."""
    async with running_bot(tmp_path, ROWS) as h:
        outsider(h.fake, "UGUEST", "T1", is_ultra_restricted=True)
        await h.event(mention("370.0", user="UGUEST"))
        await h.idle()
        assert "row 0" not in json.dumps([c.args for c in h.fake.calls], default=str)
        assert OUTSIDER_REFUSAL not in public(h)
