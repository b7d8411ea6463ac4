"""``/forget @person`` in a Teams conversation (``bots.forget_tool``), the Slack twin's
test: an admin asks, the turn waits on the approval card; a non-admin's click and a forged
(unsigned) invoke decide nothing; an admin's click runs the erase once. A non-admin asking
is refused before the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_core import ScriptedResponse
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import User
from bots.forget_tool import attach_forget
from tests.adapters.teams import payloads
from tests.bots.approval_kit import approval_agent
from tests.bots.teams.harness import ADMIN, MEMBER, teams_bot
from tests.bots.teams.test_approvals import BO, NAMES, approval_cards, approval_id_of, click

FORGET_BO = ScriptedResponse.tool("forget_person", {"person": BO})


async def conversations(state: State, aad: str) -> int:
    person = User(id=f"teams:{payloads.TENANT}:{aad}")
    return len(await state.conversations.list_conversations(person))


async def test_an_admin_asks_an_admin_approves_then_the_erase_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = build_state(StateSettings(ephemeral=True))
    script = ["Hi Bo.", "Hi Ana.", FORGET_BO, "Erased."]

    def factory(resolver: Any, settings: Any) -> Any:
        agent = approval_agent(script, resolver, state)
        attach_forget(agent, state)
        return agent

    async with teams_bot(monkeypatch, agent_factory=factory, state=state) as h:
        for user in (BO, MEMBER):
            await h.post(h.message("hello", kind="groupChat", user=user, user_name=NAMES[user]))
            await h.host.idle()
        assert (await conversations(state, BO), await conversations(state, MEMBER)) == (1, 1)

        await h.post(h.message(f"/forget {BO}", kind="groupChat", user=MEMBER))  # no admin
        await h.host.idle()
        assert approval_cards(h) == []
        assert "Access Denied" in json.dumps(h.fake.calls[-1].body)
        assert await conversations(state, BO) == 1

        await h.post(h.message(f"/forget {BO}", kind="groupChat", user=ADMIN))
        await h.host.idle()
        [(_, card)] = approval_cards(h)
        approval_id = approval_id_of(card)
        assert await conversations(state, BO) == 1  # nothing runs before an admin's click

        refused = await click(h, "approve", approval_id, user=MEMBER)
        assert "approve" in json.dumps(refused).lower()
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": "threadline.approval",
                "data": {"threadline_approval": approval_id, "decision": "approve"},
            }
        }
        forged = h.invoke("adaptiveCard/action", value, kind="groupChat", user=ADMIN)
        assert (await h.post(forged, auth=None)).status == 401
        assert await conversations(state, BO) == 1

        await click(h, "approve", approval_id, user=ADMIN)
        assert await conversations(state, BO) == 0
        assert await conversations(state, MEMBER) == 1
        assert len([r for r in await state.audit.records() if r.kind == "erase"]) == 1
    await state.aclose()
