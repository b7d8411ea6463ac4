"""``threadline forget`` through the real Slack bot's stores, on SQLite and on Redis (issue 39).

Ana and Bo ask the real bot (``agent_factory`` from a ``threadline.toml``, the real
Anthropic client on the fake Messages API); Ana also has a memory, a schedule, a pending
approval, an MCP token and a cached identity. ``threadline forget ana@acme.io --dry-run``
changes nothing; ``threadline forget ana@acme.io`` leaves none of Ana in any store (each
read directly, not through the command's report) and all of Bo; the usage totals still add
up, Ana's under her pseudonym; the audit chain still verifies and ends with the erase; her
next question in the same thread reaches the model with no earlier turn.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
from bots.cli import main
from bots.serving import Config, agent_factory, load_config
from tests.bots.slack.harness import running_bot

ANA, BO = "slack:T1:U1", "slack:T1:U2"


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    prefixes = ("SLACK_", "THREADLINE_", "ANTHROPIC_", "Microsoft", "TEAMS_", "REDIS", "AWS_")
    for name in [n for n in os.environ if n.startswith(prefixes)]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, folder: Path) -> str:
    if request.param == "sqlite":
        return f'data_dir = "{folder / "data"}"'
    url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("key_prefix")
    return f'redis_url = "{url}"\nkey_prefix = "{prefix}"'


def configure(folder: Path, llm: FakeAnthropic, state: str, more: str = "") -> Config:
    """A bot's configuration over the fake model and ``state`` (``more``: further sections)."""
    (folder / "threadline.toml").write_text(
        f"""
[llm]
api_key = "sk-ant-test"
base_url = "{llm.base_url}"
model = "claude-sonnet-5-5"

[state]
{state}
{more}"""
    )
    return load_config(argparse.Namespace(command="slack", config=None, app=None))


def mention(text: str, ts: str, user: str, thread_ts: str | None = None) -> dict[str, object]:
    event: dict[str, object] = {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


async def ask(folder: Path, config: Config, *events: dict[str, object]) -> list[str]:
    """What the bot posted in C1 (the events' answers; notices the queue held)."""
    build = agent_factory(config, "slack")
    state = build_state(config.state)
    async with running_bot(
        folder, [], agent_factory=lambda resolver, st: build(st, resolver), state=state
    ) as h:
        for event in events:
            await h.event(event)
            await h.idle()
        for agent in h.agent.served_agents():
            await agent.llm_service.aclose()
        posted = [m.text or "" for m in h.fake.visible("C1")]
    await state.aclose()
    return posted


def context(person: str) -> ToolContext:
    user = User(id=person, metadata={"workspace_id": "T1"})
    return ToolContext(user=user, conversation_id="slack:T1:C1:100.000100", request_id="r1")


async def seed(state: State, person: str, n: int) -> None:
    """What the bot's other paths would have kept of ``person``."""
    await state.memory.save_tool_usage(
        f"revenue {n}?", "run_sql", {"sql": f"select {n}"}, context(person)
    )
    schedule = Schedule(
        id=f"5e1f0c2{n}",
        workspace="slack:T1",
        owner=person,
        place=Place(
            thread_key="slack:T1:C1:1.0",
            context={"workspace_id": "T1", "channel_id": "C1", "thread_id": "1.0", "user_id": "U"},
        ),
        recurrence=Recurrence(frequency="weekdays", hour=9),
        question="revenue yesterday",
        created_at=0.0,
        next_due=32400.0,
    )
    await state.schedules.add(schedule, limits=ScheduleLimits())
    record = ApprovalRecord.example(id=f"a{n}", asker_id=person)
    await ApprovalBook(state.records).open(record)
    await state.cache.set(f"mcp:token:tickets:{person_key(person)}", "sealed")
    said = {"ts": f"10{n}.1", "user": person.rsplit(":", 1)[1], "text": f"secret {n}"}
    await ThreadTranscript(state.cache).record("T1", "C7", "100.1", [said])


async def holdings(state: State, person: str) -> dict[str, object]:
    """Everything of ``person`` each store holds, read from the store itself."""
    today = dt.datetime.now(dt.UTC).date()
    usage = await state.usage.summary(today, today)
    pseudonym = (await state.audit.pseudonyms()).of(person)
    return {
        "conversations": len(await state.conversations.list_conversations(User(id=person))),
        "memory": len(await state.memory.get_recent_memories(context(person))),
        "schedules": len(await state.schedules.owned_by(person)),
        "approval": await state.records.get(f"approval:a{person[-1]}") is not None,
        "mcp token": await state.cache.get(f"mcp:token:tickets:{person_key(person)}"),
        "identity cache": await state.cache.get(f"slack:identity:user:T1:{person[-2:]}")
        is not None,
        "usage": person in usage.by["person"],
        "directory": pseudonym in await state.audit.people(),
        "transcript": [
            m["text"]
            for m in await state.cache.append(
                "slack:thread-messages:slack:T1:C7:100.1", [], keep=50
            )
            if m.get("user") == person.rsplit(":", 1)[1]
        ],
        "audit details": sum(
            1
            for r in await state.audit.records()
            if r.person == pseudonym and r.details and r.kind != "erase"
        ),
    }


async def command(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_forget_leaves_none_of_a_person_in_any_store(folder: Path, backend: str) -> None:
    async with FakeAnthropic() as llm:
        llm.queue(Reply.text("For Ana."), Reply.text("For Bo."), Reply.text("Fresh."))
        config = configure(folder, llm, backend)
        await ask(
            folder,
            config,
            mention("revenue?", "100.000100", "U1"),
            mention("orders?", "200.000100", "U2"),
        )
        state = build_state(config.state)
        await seed(state, ANA, 1)
        await seed(state, BO, 2)
        today = dt.datetime.now(dt.UTC).date()
        total_before = (await state.usage.summary(today, today)).total
        ana_before = (await state.usage.summary(today, today)).by["person"][ANA]
        present = await holdings(state, ANA)
        assert all(present.values()), present
        bo = await holdings(state, BO)
        assert all(bo.values()), bo

        assert await command("forget", "ana@acme.io", "--dry-run") == 0
        assert await holdings(state, ANA) == present
        assert await command("forget", "ana@acme.io") == 0

        gone = await holdings(state, ANA)
        assert not any(gone.values()), gone
        assert await holdings(state, BO) == bo
        summary = await state.usage.summary(today, today)
        pseudonym = (await state.audit.pseudonyms()).of(ANA)
        assert summary.total.calls == total_before.calls
        assert summary.total.tokens == total_before.tokens
        assert summary.by["person"][pseudonym].calls == ana_before.calls
        verdict = await state.audit.verify()
        assert verdict.ok, verdict
        erase = (await state.audit.records())[-1]
        assert (erase.kind, erase.person) == ("erase", pseudonym)
        assert erase.details is not None and erase.details["conversations"] == 1
        await state.aclose()

        posted = await ask(folder, config, mention("and now?", "300.000100", "U1", "100.000100"))
        # the CLI queued one line for her schedule's place; the next bot posted it
        told = [text for text in posted if "was removed" in text]
        assert len(told) == 1 and "5e1f0c21" in told[0], posted
        messages = llm.requests[-1].body["messages"]
        said = [m for m in messages if m["role"] == "assistant"]
        assert not said, messages  # no earlier answer of hers reached the model


async def test_forget_workspace_erases_its_people_only() -> None:
    """For the uninstall handlers (issue 38): everyone of one workspace, no one else."""
    from agent_core.audit_chain import AuditEntry
    from agent_core.forget import forget_workspace
    from agent_core.state_factory import StateSettings

    state = build_state(StateSettings(ephemeral=True))
    pseudonyms = await state.audit.pseudonyms()
    for person in (ANA, BO, "slack:T2:U9"):
        user = User(id=person)
        await state.conversations.create_conversation(f"slack:{person[6:8]}:C1:1.1", user, "hi")
        entry = AuditEntry(at=1.0, kind="question", person=pseudonyms.of(person))
        await state.audit.append(entry, identity={"id": person})
    reports = await forget_workspace(state, "slack:T1")
    assert sorted(r.ids[0] for r in reports) == [ANA, BO]
    assert await state.conversations.list_conversations(User(id=ANA)) == []
    assert await state.conversations.list_conversations(User(id=BO)) == []
    assert len(await state.conversations.list_conversations(User(id="slack:T2:U9"))) == 1
    assert (await state.audit.verify()).ok
