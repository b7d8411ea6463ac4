"""``app_uninstalled`` / ``tokens_revoked`` with ``erase_on_uninstall`` (``bots.uninstall``),
through the real OAuth Slack bot (signed events, bolt, ``agent_factory`` from a
``threadline.toml``), on SQLite and on Redis.

Ana (T1) and Cy (T2) ask the bot and have data in every store. ``app_uninstalled`` from
T1 removes T1's tokens; with ``erase_on_uninstall = true`` none of Ana is left in any store
(each read from the store itself) and all of Cy is; T2 is still installed and answered; the
audit chain verifies and ends with an ``uninstall`` record for ``slack:T1``. Without the
setting, the tokens go and every store keeps Ana.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.installations import KeyValueInstallationStore
from adapters.slack.testing import FakeSlackApi
from adapters.slack.threads import ThreadTranscript
from agent_core.approvals.book import ApprovalBook
from agent_core.approvals.record import ApprovalRecord
from agent_core.context import ToolContext
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.mcp.auth.vault import person_key
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.store import ScheduleLimits
from agent_core.state_factory import State, build_state
from agent_core.users import User
from bots.serving import agent_factory
from tests.bots.slack.harness import running_bot
from tests.bots.test_forget import backend, configure, folder, mention

__all__ = ["backend", "folder"]  # the fixtures of tests/bots/test_forget.py

ANA, CY = "slack:T1:U1", "slack:T2:U9"


def context(person: str) -> ToolContext:
    team = person.split(":")[1]
    user = User(id=person, metadata={"workspace_id": team})
    return ToolContext(user=user, conversation_id=f"slack:{team}:C1:1.0", request_id="r1")


async def seed(state: State, person: str, n: int) -> None:
    """What the bot's other paths would have kept of ``person``."""
    team, user = person.split(":")[1:]
    await state.memory.save_tool_usage(
        f"q {n}?", "run_sql", {"sql": f"select {n}"}, context(person)
    )
    schedule = Schedule(
        id=f"5e1f0c2{n}",
        workspace=f"slack:{team}",
        owner=person,
        place=Place(thread_key=f"slack:{team}:C1:1.0"),
        recurrence=Recurrence(frequency="weekdays", hour=9),
        question="revenue yesterday",
        created_at=0.0,
        next_due=32400.0,
    )
    await state.schedules.add(schedule, limits=ScheduleLimits())
    await ApprovalBook(state.records).open(ApprovalRecord.example(id=f"a{n}", asker_id=person))
    await state.cache.set(f"mcp:token:tickets:{person_key(person)}", "sealed")
    said = {"ts": f"10{n}.1", "user": user, "text": f"secret {n}"}
    await ThreadTranscript(state.cache).record(team, "C7", "100.1", [said])


async def holdings(state: State, person: str, n: int) -> dict[str, object]:
    """Everything of ``person`` each store holds, read from the store itself."""
    team, user = person.split(":")[1:]
    today = dt.datetime.now(dt.UTC).date()
    pseudonym = (await state.audit.pseudonyms()).of(person)
    transcript = await state.cache.append(
        f"slack:thread-messages:slack:{team}:C7:100.1", [], keep=50
    )
    return {
        "conversations": len(await state.conversations.list_conversations(User(id=person))),
        "memory": len(await state.memory.get_recent_memories(context(person))),
        "schedules": len(await state.schedules.owned_by(person)),
        "workspace schedules": len(await state.schedules.in_workspace(f"slack:{team}")),
        "approval": await state.records.get(f"approval:a{n}") is not None,
        "mcp token": await state.cache.get(f"mcp:token:tickets:{person_key(person)}"),
        "identity cache": await state.cache.get(f"slack:identity:user:{team}:{user}") is not None,
        "usage": person in (await state.usage.summary(today, today)).by["person"],
        "directory": pseudonym in await state.audit.people(),
        "transcript": [m["text"] for m in transcript if m.get("user") == user],
        "audit details": sum(
            1
            for r in await state.audit.records()
            if r.person == pseudonym and r.details and r.kind != "erase"
        ),
    }


def installation(team: str) -> Installation:
    return Installation(
        app_id="A1",
        team_id=team,
        bot_token=f"xoxb-{team}",
        bot_id=f"B{team}",
        bot_user_id="UBOT",
        bot_scopes=["chat:write", "app_mentions:read"],
        user_id="UADMIN",
    )


@asynccontextmanager
async def oauth_bot(
    folder: Path,
    backend: str,
    llm: FakeAnthropic,
    fake: FakeSlackApi,
    teams: tuple[str, ...],
    *,
    erase: bool,
) -> AsyncIterator[tuple[Any, State, KeyValueInstallationStore]]:
    """The OAuth Slack bot over ``backend``, installed in ``teams``: its harness, its state
    and its installations (the state closed, the agents' model clients too, at the end)."""
    config = configure(folder, llm, backend)
    build = agent_factory(config, "slack")
    state = build_state(config.state)
    store = KeyValueInstallationStore(state.records)
    for team in teams:
        await store.async_save(installation(team))
    async with running_bot(
        folder,
        [],
        fake=fake,
        agent_factory=lambda resolver, st: build(st, resolver),
        state=state,
        bot_token=None,
        client_id="111.222",
        client_secret="shh",
        erase_on_uninstall=erase,
    ) as h:
        yield h, state, store
        for agent in h.agent.served_agents():
            await agent.llm_service.aclose()
    await state.aclose()


@pytest.mark.parametrize("erase", [True, False], ids=["erase", "keep"])
async def test_app_uninstalled_erases_that_workspace_only(
    folder: Path, backend: str, erase: bool
) -> None:
    async with FakeAnthropic() as llm, FakeSlackApi() as fake:
        llm.queue(Reply.text("For Ana."), Reply.text("For Cy."), Reply.text("Cy again."))
        async with oauth_bot(folder, backend, llm, fake, ("T1", "T2"), erase=erase) as (
            h,
            state,
            store,
        ):
            fake.users["U9"] = {
                "id": "U9",
                "team_id": "T2",
                "profile": {"display_name": "Cy", "email": "cy@beta.io"},
            }
            await h.event(mention("revenue?", "100.000100", "U1"), team="T1")
            await h.event(mention("orders?", "200.000100", "U9"), team="T2")
            await h.idle()
            assert len(fake.calls_to("chat.postMessage")) == 2
            await seed(state, ANA, 1)
            await seed(state, CY, 2)
            ana, cy = await holdings(state, ANA, 1), await holdings(state, CY, 2)
            assert all(ana.values()), ana
            assert all(cy.values()), cy

            await h.event({"type": "app_uninstalled"}, team="T1")
            assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
            assert await store.async_find_bot(enterprise_id=None, team_id="T2") is not None

            after = await holdings(state, ANA, 1)
            if erase:
                assert not any(after.values()), after
            else:
                assert after == ana
            assert await holdings(state, CY, 2) == cy
            verdict = await state.audit.verify()
            assert verdict.ok, verdict
            uninstalls = [r for r in await state.audit.records() if r.kind == "uninstall"]
            if erase:
                [record] = uninstalls
                assert (record.workspace, record.details) == (
                    "slack:T1",
                    {"reason": "app_uninstalled", "people_erased": 1},
                )
            else:
                assert uninstalls == []

            await h.event(mention("again?", "300.000100", "U9", "200.000100"), team="T2")
            await h.idle()
            assert len(fake.calls_to("chat.postMessage")) == 3  # T2 still answered


async def test_tokens_revoked_for_the_bot_erases_and_for_a_user_does_not(
    folder: Path, backend: str
) -> None:
    """``tokens_revoked`` naming only a person's user token removes that token, nothing
    else; naming the bot's token stops the installation and (configured) erases it."""
    async with FakeAnthropic() as llm, FakeSlackApi() as fake:
        llm.queue(Reply.text("For Ana."))
        async with oauth_bot(folder, backend, llm, fake, ("T1",), erase=True) as (h, state, store):
            await h.event(mention("revenue?", "100.000100", "U1"), team="T1")
            await h.idle()
            await seed(state, ANA, 1)
            present = await holdings(state, ANA, 1)
            revoked = {"type": "tokens_revoked", "tokens": {"oauth": ["U1"], "bot": []}}
            await h.event(revoked, team="T1")
            assert await store.async_find_bot(enterprise_id=None, team_id="T1") is not None
            assert await holdings(state, ANA, 1) == present

            revoked = {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBOT"]}}
            await h.event(revoked, team="T1")
            assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
            gone = await holdings(state, ANA, 1)
            assert not any(gone.values()), gone
            [record] = [r for r in await state.audit.records() if r.kind == "uninstall"]
            assert record.details == {"reason": "tokens_revoked", "people_erased": 1}
