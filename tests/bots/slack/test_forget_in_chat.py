"""``/forget @person`` in a Slack thread (``bots.forget_tool``), through the real bot: an
admin asks, the turn waits on an approval card; a non-admin's click and a forged click
decide nothing; an admin's click runs the erase once. A non-admin asking gets no erase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_core import ScriptedResponse
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.store import ScheduleLimits
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import User
from bots.forget_tool import attach_forget
from tests.bots.approval_kit import approval_agent
from tests.bots.slack.harness import running_bot
from tests.bots.slack.test_approvals import approval_id_of, approval_message, click, told

ANA, BO = "slack:T1:U1", "slack:T1:U2"
FORGET_BO = ScriptedResponse.tool("forget_person", {"person": "<@U2>"})


def mention(text: str, ts: str, user: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


async def held(state: State, person: str) -> tuple[int, int]:
    """Their conversations and schedules, read from the stores."""
    conversations = await state.conversations.list_conversations(User(id=person))
    return len(conversations), len(await state.schedules.owned_by(person))


async def test_an_admin_asks_an_admin_approves_then_the_erase_runs(tmp_path: Path) -> None:
    state = build_state(StateSettings(ephemeral=True))
    script = ["Hi Bo.", "Hi Ana.", FORGET_BO, "Erased."]

    def factory(resolver: Any, st: State) -> Any:
        agent = approval_agent(script, resolver, st)
        attach_forget(agent, st)
        return agent

    async with running_bot(tmp_path, [], agent_factory=factory, state=state) as h:
        await h.event(mention("hello", "100.000100", "U2"))
        await h.event(mention("hello", "110.000100", "U1"))
        await h.idle()
        schedule = Schedule(
            id="5e1f0c29",
            workspace="slack:T1",
            owner=BO,
            place=Place(thread_key="slack:T1:C1:1.0"),
            recurrence=Recurrence(frequency="weekdays", hour=9),
            question="revenue",
            created_at=0.0,
            next_due=32400.0,
        )
        await state.schedules.add(schedule, limits=ScheduleLimits())
        assert await held(state, BO) == (1, 1)

        await h.event(mention("/forget <@U2>", "200.000100", "U1"))  # Ana is no admin
        await h.idle()
        assert not [m for m in h.fake.messages if approval_id_of(m)]
        assert "Access Denied" in (h.fake.visible("C1")[-1].text or "")
        assert await held(state, BO) == (1, 1)

        await h.event(mention("/forget <@U2>", "300.000100", "UADMIN"))
        await h.idle()
        card = approval_message(h)
        assert await held(state, BO) == (1, 1)  # nothing runs before an admin's click
        await click(h, "approve", card, user="U1")  # not an admin
        assert any("approve" in text.lower() for text in told(h, "U1")), told(h, "U1")
        forged = await click(h, "approve", card, user="UADMIN", secret="another-app's-secret")
        assert forged.status == 401
        assert await held(state, BO) == (1, 1)
        assert approval_id_of(card) is not None

        await click(h, "approve", card, user="UADMIN")
        assert await held(state, BO) == (0, 0)
        assert (await held(state, ANA))[0] == 1  # Ana's stays
        erase = [r for r in await state.audit.records() if r.kind == "erase"]
        assert len(erase) == 1
    await state.aclose()
