"""The Home tab, through the real Slack bot (issue 40): the person's schedules with buttons
that work as the same commands typed in chat, checked the same way."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from adapters.slack.testing import FakeSlackApi
from agent_core.llm.scripted import ScriptedResponse
from agent_core.state_factory import State
from agent_core.usage.budget_settings import BudgetLimit, BudgetSettings
from agent_core.usage.settings import UsageSettings
from bots.usage import attach_usage
from tests.bots.approval_kit import Refund, approval_agent, refund_script
from tests.bots.slack.agents import build_agent
from tests.bots.slack.harness import SlackHarness, running_bot, sign
from tests.bots.slack.test_approvals import (
    approval_id_of,
    ask,
    click,
    ever_approval_id,
    thread_text,
)


def opened(user: str = "U1") -> dict[str, Any]:
    return {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home"}


def home_click(user: str, command: str, channel: str = "DU1") -> dict[str, Any]:
    """A click on a Home button (a view: no channel, no message)."""
    return {
        "type": "block_actions",
        "team": {"id": "T1", "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "team_id": "T1"},
        "api_app_id": "A1",
        "token": "legacy",
        "trigger_id": "trig",
        "container": {"type": "view", "view_id": "V1"},
        "view": {"id": "V1", "type": "home", "private_metadata": channel, "blocks": []},
        "actions": [
            {
                "action_id": "threadline_button:0",
                "block_id": "b",
                "value": command,
                "type": "button",
            }
        ],
    }


def buttons(view: dict[str, Any]) -> dict[str, str]:
    """The view's buttons: label -> the command it sends."""
    found = {}
    for block in view["blocks"]:
        for element in block.get("elements", []):
            if element.get("type") == "button":
                found[element["text"]["text"]] = element["value"]
    return found


async def schedule_for_ana(h: SlackHarness) -> str:
    await h.command("every weekday 9:00 revenue yesterday", command="/schedule")
    await h.idle()
    [schedule] = await h.bot.schedules.store.every()
    return schedule.id


async def test_home_shows_the_persons_schedules_and_pause_works(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        schedule_id = await schedule_for_ana(h)
        await h.event(opened("U1"))
        view = h.fake.views["U1"]
        assert View(**view).to_dict()["type"] == "home"  # a view slack_sdk accepts
        for block in view["blocks"]:
            Block.parse(block).validate_json()  # type: ignore[union-attr]
        assert schedule_id in json.dumps(view) and "revenue yesterday" in json.dumps(view)
        assert buttons(view)["Pause"] == f"/schedule pause {schedule_id}"
        assert view["private_metadata"] == "DU1"

        assert (
            await h.interaction(home_click("U1", f"/schedule pause {schedule_id}"))
        ).status == 200
        [schedule] = await h.bot.schedules.store.every()
        assert schedule.status == "paused"
        view = h.fake.views["U1"]  # published again: the reply on top, then Resume
        assert buttons(view)["Resume"] == f"/schedule resume {schedule_id}"
        assert "paused" in json.dumps(view).lower()


async def test_another_persons_forged_action_changes_nothing(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        schedule_id = await schedule_for_ana(h)
        forged = home_click("U2", f"/schedule remove {schedule_id}", channel="DU2")
        assert (await h.interaction(forged)).status == 200
        [schedule] = await h.bot.schedules.store.every()
        assert schedule.status == "active"  # Bo cannot remove Ana's schedule
        assert schedule_id not in json.dumps(h.fake.views.get("U1", {}))
        assert "U2" in h.fake.views  # Bo sees his own home, with the refusal

        payload = home_click("U1", f"/schedule pause {schedule_id}")
        raw = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        unsigned = await h.post(raw, {}, "application/x-www-form-urlencoded")
        assert unsigned.status == 401
        wrong = sign(raw, secret="not-the-secret")
        assert (await h.post(raw, wrong, "application/x-www-form-urlencoded")).status == 401
        [schedule] = await h.bot.schedules.store.every()
        assert schedule.status == "active"


async def test_a_suggested_question_on_home_is_asked_in_the_persons_dm(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Revenue was 10."]) as h:
        await h.interaction(home_click("U1", "What was revenue yesterday?"))
        await h.idle()
        assert h.llm_questions() == ["What was revenue yesterday?"]
        dm = [m.text for m in h.fake.visible("DU1")]
        assert any("Revenue was 10." in text for text in dm)


async def test_home_shows_the_persons_use_of_their_budget(tmp_path: Path) -> None:
    """The budgets configured the usual way (``attach_usage``), spent by a question."""

    def factory(resolver: Any, state: State) -> Any:
        usage = {"input_tokens": 1200, "output_tokens": 80}
        answer = ScriptedResponse(text="Ten rows.", usage=usage)
        agent = build_agent([answer], resolver, memory=state.memory)
        limits = BudgetSettings(limits=[BudgetLimit(scope="person", period="day", tokens=5000)])
        attach_usage(agent, state, UsageSettings(), limits)
        return agent

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.event(opened("U1"))
        assert "Your daily budget: 0 of 5,000 tokens used" in json.dumps(h.fake.views["U1"])
        await h.command("how many rows?")
        await h.idle()
        await h.event(opened("U1"))
        shown = json.dumps(h.fake.views["U1"])
        assert "Your daily budget: 1,280 of 5,000 tokens used" in shown


def shows(user: str, label: str) -> Callable[[FakeSlackApi], bool]:
    """Whether ``user``'s Home (as last published) has a button ``label``."""
    return lambda fake: label in buttons(fake.views.get(user, {"blocks": []}))


async def test_home_is_published_again_when_a_command_typed_in_chat_changes_it(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, []) as h:
        schedule_id = await schedule_for_ana(h)
        assert h.fake.calls_to("views.publish") == []  # never opened: nothing to refresh
        await h.event(opened("U1"))
        assert "Pause" in buttons(h.fake.views["U1"])
        await h.command(f"pause {schedule_id}", command="/schedule")
        await h.fake.wait_for(shows("U1", "Resume"))
        assert buttons(h.fake.views["U1"])["Resume"] == f"/schedule resume {schedule_id}"
        assert h.fake.views["U1"]["private_metadata"] == "DU1"  # questions still go there


async def test_an_admin_pausing_someones_schedule_refreshes_the_owners_home(
    tmp_path: Path,
) -> None:
    """Refreshed when changed by anyone (issue 40): Alex (an admin) pauses Ana's schedule
    in chat; Ana's Home shows Resume without her opening it again. Bo's refused pause
    changes nothing, and nobody else's home is published."""
    async with running_bot(tmp_path, []) as h:
        schedule_id = await schedule_for_ana(h)
        await h.event(opened("U1"))
        await h.command(f"pause {schedule_id}", command="/schedule", user="U2")
        await h.idle()
        await h.command(f"pause {schedule_id}", command="/schedule", user="UADMIN")
        await h.fake.wait_for(shows("U1", "Resume"))
        [schedule] = await h.bot.schedules.store.every()
        assert schedule.status == "paused" and "paused by" in (schedule.paused_reason or "")
        assert sorted(h.fake.views) == ["U1"]  # Bo and Alex never opened theirs


async def test_changes_close_together_publish_a_home_once(tmp_path: Path) -> None:
    """Debounced per person: three changes of Ana's schedules before the refresher's round
    publish her home once; a home never opened is not published at all."""
    async with running_bot(tmp_path, []) as h:
        schedule_id = await schedule_for_ana(h)
        await h.event(opened("U1"))
        before = len(h.fake.calls_to("views.publish"))
        h.bot.home.delay = 60.0  # the round is run by hand below
        for action in ("pause", "resume", "pause"):
            await h.command(f"{action} {schedule_id}", command="/schedule")
        await h.command("every weekday 8:00 orders", command="/schedule", user="U2")
        await h.idle()
        assert await h.bot.home.refresh_waiting() == 1
        assert len(h.fake.calls_to("views.publish")) == before + 1
        assert "Resume" in buttons(h.fake.views["U1"]) and "U2" not in h.fake.views
        assert await h.bot.home.refresh_waiting() == 0


async def test_a_new_approval_appears_on_the_approvers_home_without_opening_it(
    tmp_path: Path,
) -> None:
    """Refreshed when an approval arrives and when it is decided (issue 40): Alex (an
    admin, an approver) opened Home before Bo asked; Bo's refund appears there with
    Approve and Deny, without Alex opening it again; Ana (no approver) is not shown it.
    Once Bo approves it in the thread, it leaves Alex's Home the same way."""
    refund = Refund()

    def factory(resolver: Any, state: State) -> Any:
        return approval_agent(
            refund_script(), resolver, state, refund=refund, approvers=["asker", "admin"]
        )

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.event(opened("UADMIN"))
        await h.event(opened("U1"))
        assert "Approve" not in buttons(h.fake.views["UADMIN"])
        ana_views = [c for c in h.fake.calls_to("views.publish") if c.args["user_id"] == "U1"]

        message = await ask(h, user="U2")
        approval_id = ever_approval_id(h)
        await h.fake.wait_for(shows("UADMIN", "Approve"))
        assert buttons(h.fake.views["UADMIN"])["Approve"] == f"/approve {approval_id}"
        assert "Bo asks to run refund" in json.dumps(h.fake.views["UADMIN"])

        await click(h, "approve", message, user="U2")
        await h.idle()
        assert refund.runs == [42]
        await h.fake.wait_for(lambda fake: not shows("UADMIN", "Approve")(fake))
        assert [c for c in h.fake.calls_to("views.publish") if c.args["user_id"] == "U1"] == (
            ana_views
        )


async def test_run_now_on_home_runs_the_schedule_once_as_its_owner(tmp_path: Path) -> None:
    """Run now (issue 40): the schedule's question runs now where it posts, as a scheduled
    run does, and its next run stays; Bo's forged Run now of it runs nothing."""
    async with running_bot(tmp_path, ["Revenue yesterday: 1,234 EUR."]) as h:
        schedule_id = await schedule_for_ana(h)
        [before] = await h.bot.schedules.store.every()
        await h.event(opened("U1"))
        assert buttons(h.fake.views["U1"])["Run now"] == f"/schedule run {schedule_id}"

        forged = home_click("U2", f"/schedule run {schedule_id}", channel="DU2")
        assert (await h.interaction(forged)).status == 200
        await h.idle()
        assert h.llm_questions() == []
        assert not any("Scheduled by" in (m.text or "") for m in h.fake.messages)
        assert "no schedule" in json.dumps(h.fake.views["U2"]).lower()

        await h.interaction(home_click("U1", f"/schedule run {schedule_id}"))
        await h.idle()
        assert h.llm_questions()[-1].endswith("revenue yesterday")
        [marker] = [m for m in h.fake.messages if "Scheduled by" in (m.text or "")]
        assert marker.channel == before.place.context["channel_id"]
        assert "Running now" in json.dumps(h.fake.views["U1"])
        [after] = await h.bot.schedules.store.every()
        assert after.next_due == before.next_due  # its times are unchanged
        assert after.last_run is not None and after.last_run.outcome == "posted"


async def test_home_lists_the_approvals_one_may_decide_and_approves_as_in_the_thread(
    tmp_path: Path,
) -> None:
    """Pending approvals on Home (issue 40): Alex (an admin, an approver) sees Bo's refund
    with Approve and Deny, Bo's colleague Ana does not (approvers: Bo, admins); Ana's forged
    Approve decides nothing; Alex's Approve is the thread's own decision: the tool runs once,
    the approval message in the thread is updated and the turn goes on there."""
    refund = Refund()

    def factory(resolver: Any, state: State) -> Any:
        return approval_agent(
            refund_script(), resolver, state, refund=refund, approvers=["asker", "admin"]
        )

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        message = await ask(h, user="U2")
        approval_id = ever_approval_id(h)
        await h.event(opened("UADMIN"))
        shown = buttons(h.fake.views["UADMIN"])
        assert shown["Approve"] == f"/approve {approval_id}"
        assert shown["Deny"] == f"/deny {approval_id}"
        assert "Bo asks to run refund" in json.dumps(h.fake.views["UADMIN"])
        await h.event(opened("U1"))
        assert "Approve" not in buttons(h.fake.views["U1"])

        forged = home_click("U1", f"/approve {approval_id}")
        assert (await h.interaction(forged)).status == 200
        await h.idle()
        assert refund.runs == []
        assert approval_id_of(message) is not None  # still waiting, buttons and all
        assert "may approve this" in json.dumps(h.fake.views["U1"])

        await h.interaction(home_click("UADMIN", f"/approve {approval_id}", channel="DUADMIN"))
        await h.idle()
        assert refund.runs == [42]
        assert approval_id_of(message) is None  # the thread's message shows the decision
        assert "Approved by Alex" in json.dumps(message.blocks)
        assert "Refunded." in thread_text(h, message)
        home = h.fake.views["UADMIN"]
        assert "Approved by Alex" in json.dumps(home) and "Approve" not in buttons(home)

        await h.interaction(home_click("UADMIN", f"/deny {approval_id}", channel="DUADMIN"))
        await h.idle()
        assert refund.runs == [42]
        assert "Already decided" in json.dumps(h.fake.views["UADMIN"])


async def test_approve_and_deny_typed_as_slash_commands_decide_as_on_home(
    tmp_path: Path,
) -> None:
    """``/approve <id>`` typed in Slack (issue 40, as Teams' typed one): Ana (no approver)
    is refused and nothing runs; Alex's is the thread's own decision (the tool runs once,
    the message there is updated, the turn goes on); a later ``/deny`` is told it is
    decided already; a bare ``/approve`` says how to use it."""
    refund = Refund()

    def factory(resolver: Any, state: State) -> Any:
        return approval_agent(
            refund_script(), resolver, state, refund=refund, approvers=["asker", "admin"]
        )

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        message = await ask(h, user="U2")
        approval_id = ever_approval_id(h)

        refused = await h.command(approval_id, command="/approve", user="U1")
        assert refused.status == 200 and "may approve this" in await refused.text()
        await h.idle()
        assert refund.runs == [] and approval_id_of(message) is not None

        approved = await h.command(approval_id, command="/approve", user="UADMIN")
        assert approved.status == 200
        await h.idle()
        assert refund.runs == [42]
        assert "Approved by Alex" in json.dumps(message.blocks)
        assert "Refunded." in thread_text(h, message)

        late = await h.command(approval_id, command="/deny", user="UADMIN")
        assert "Already decided" in await late.text()
        assert refund.runs == [42]
        assert "/approve <id>" in await (await h.command("", command="/approve")).text()
