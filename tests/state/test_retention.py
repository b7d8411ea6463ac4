"""``[retention]`` sweeps on SQLite and Redis: exactly what is older than each setting goes
(a day either side of each cut-off, the clock pinned), ``"keep"`` keeps everything, and
``threadline config`` shows the section."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.context import ToolContext
from agent_core.conversations import Conversation, Message
from agent_core.retention import RetentionSettings, sweep
from agent_core.schedules.testing import ManualClock
from agent_core.state.memory_redis import RedisAgentMemory
from agent_core.state.memory_sqlite import SqliteAgentMemory
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.usage.counts import TokenCounts
from agent_core.usage.ledger import UsageRecord
from agent_core.users import User

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
ANA = User(id="slack:T1:U1", metadata={"workspace_id": "T1"})
CONTEXT = ToolContext(user=ANA, conversation_id="slack:T1:C1:1.1", request_id="r")


class Stamps:
    """The memory's clock: whatever age the test is writing at."""

    def __init__(self) -> None:
        self.at = NOW

    def __call__(self) -> dt.datetime:
        return self.at


@pytest.fixture(params=["sqlite", "redis"])
async def state(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[State, Stamps]]:
    stamps = Stamps()
    if request.param == "sqlite":
        built = build_state(StateSettings(data_dir=tmp_path))
        memory = SqliteAgentMemory(tmp_path / "memory.db", clock=stamps)
    else:
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("key_prefix")
        built = build_state(StateSettings(redis_url=url, key_prefix=prefix))
        redis = built.conversations._redis  # type: ignore[attr-defined]
        memory = RedisAgentMemory(redis, key_prefix=prefix, clock=stamps)
    yield dataclasses.replace(built, memory=memory), stamps
    if isinstance(memory, SqliteAgentMemory):
        await memory.close()
    await built.aclose()


async def seed(state: State, stamps: Stamps, days_ago: float, n: int) -> None:
    at = NOW - dt.timedelta(days=days_ago)
    conversation = Conversation(id=f"slack:T1:C1:{n}.1", user=ANA)
    conversation.add_message(Message(role="user", content=f"question {n}"))
    conversation.updated_at = at.timestamp()
    await state.conversations.update_conversation(conversation)
    stamps.at = at
    await state.memory.save_tool_usage(f"revenue {n}?", "run_sql", {"sql": f"select {n}"}, CONTEXT)
    record = UsageRecord(at, f"t{n}", ANA.id, None, "slack:T1", "m", TokenCounts(input=3), 10)
    await state.usage.record(record)


async def kept(state: State, stamps: Stamps) -> dict[str, list[str]]:
    """What each store holds, read from the store itself."""
    stamps.at = NOW
    conversations = await state.conversations.list_conversations(ANA)
    memories = await state.memory.get_recent_memories(CONTEXT, limit=50)
    first = (NOW - dt.timedelta(days=500)).date()
    usage = await state.usage.summary(first, NOW.date())
    return {
        "conversations": sorted(c.messages[0].content for c in conversations),
        "memories": sorted(m.question for m in memories),
        "usage_calls": [str(usage.total.calls)],
    }


async def test_a_sweep_removes_exactly_what_is_older_than_each_setting(
    state: tuple[State, Stamps],
) -> None:
    store, stamps = state
    for n, days_ago in enumerate((30, 89, 91, 364, 366, 399, 401)):
        await seed(store, stamps, days_ago, n)
    assert len((await kept(store, stamps))["conversations"]) == 7
    swept = await sweep(store, RetentionSettings(), clock=ManualClock.at(NOW))
    after = await kept(store, stamps)
    assert after["conversations"] == ["question 0", "question 1"]  # 30 and 89 days
    assert after["memories"] == [f"revenue {n}?" for n in range(4)]  # up to 364 days
    assert after["usage_calls"] == ["6"]  # all but 401 days ago
    assert swept.removed["conversations"] == 5
    assert swept.removed["memories"] == 3
    assert swept.cutoffs["conversations"] == NOW.timestamp() - 90 * 86400


async def test_keep_keeps_everything(state: tuple[State, Stamps]) -> None:
    store, stamps = state
    for n, days_ago in enumerate((1, 1000)):
        await seed(store, stamps, days_ago, n)
    keep = RetentionSettings(conversations="keep", memories="keep", usage="keep")
    swept = await sweep(store, keep, clock=ManualClock.at(NOW))
    assert swept.removed == {}
    after = await kept(store, stamps)
    assert len(after["conversations"]) == 2 and len(after["memories"]) == 2


def test_config_shows_the_retention_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bots.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "threadline.toml").write_text("[retention]\nconversations = 30\n")
    assert main(["config"]) == 0
    shown = capsys.readouterr().out
    assert "[retention]" in shown and "conversations" in shown and "30" in shown
    assert "memories" in shown and "365" in shown


async def test_two_sweepers_on_redis_sweep_once_per_period(redis_url: str, key_prefix: str) -> None:
    """The bots' own sweep (``RetentionSweeper``), in two "processes" (each its own Redis
    connections) on one ``ManualClock``: in each of three periods exactly one sweeps, and
    what was older than the cut-off at that period is gone."""
    import asyncio

    from agent_core.retention import RetentionSweeper, Swept

    clock = ManualClock.at(NOW)
    settings = RetentionSettings(sweep_every=3600)
    states = [build_state(StateSettings(redis_url=redis_url, key_prefix=key_prefix)) for _ in "ab"]
    ticks: list[tuple[str, int, Swept | None]] = []
    sweepers = [
        RetentionSweeper(
            state,
            settings,
            clock=clock,
            on_tick=lambda swept, name=name: ticks.append((name, int(clock.now() // 3600), swept)),
        )
        for name, state in zip("ab", states, strict=True)
    ]
    first = int(clock.now() // 3600)
    for period in range(3):
        old = Conversation(id=f"slack:T1:C1:{period}.1", user=ANA)
        old.add_message(Message(role="user", content=f"old {period}"))
        old.updated_at = clock.now() - 91 * 86400
        await states[0].conversations.update_conversation(old)
        if period == 0:
            tasks = [asyncio.create_task(s.run()) for s in sweepers]
        else:
            clock.advance(3600)
        await clock.sleeping(2)  # both looked at this period and sleep to the next
        assert await states[1].conversations.list_conversations(ANA) == []
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for state in states:
        await state.aclose()

    by_period: dict[int, list[Swept | None]] = {}
    for _, period, swept in ticks:
        by_period.setdefault(period, []).append(swept)
    assert sorted(by_period) == [first, first + 1, first + 2]
    for period, results in by_period.items():
        done = [swept for swept in results if swept is not None]
        assert len(results) == 2 and len(done) == 1, (period, results)
        assert done[0].removed["conversations"] == 1


async def test_the_bots_sweep_runs_while_they_serve_unless_turned_off() -> None:
    """``sweeping`` (what ``bots.slack.app.serve`` and ``bots.teams.app.serve`` wrap the
    server in): swept at once, then every period; ``sweep_every = 0``: nothing runs."""
    from agent_core.retention import sweeping

    clock = ManualClock.at(NOW)
    state = build_state(StateSettings(ephemeral=True))

    async def old(n: int) -> None:
        conversation = Conversation(id=f"slack:T1:C1:{n}.1", user=ANA)
        conversation.add_message(Message(role="user", content=f"old {n}"))
        conversation.updated_at = clock.now() - 91 * 86400
        await state.conversations.update_conversation(conversation)

    await old(1)
    async with sweeping(state, RetentionSettings(sweep_every=0), clock=clock) as off:
        assert off is None
    assert len(await state.conversations.list_conversations(ANA)) == 1
    async with sweeping(state, RetentionSettings(sweep_every=60), clock=clock) as on:
        assert on is not None
        await clock.sleeping(1)
        assert await state.conversations.list_conversations(ANA) == []
        await old(2)
        clock.advance(60)
        await clock.sleeping(1)
        assert await state.conversations.list_conversations(ANA) == []
    assert clock.sleepers == 0  # the task ended with the block
