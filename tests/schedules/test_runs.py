"""One scheduled run, as the bots run it (``bots.schedules.run.ScheduledRun``): the owner
again, the alert's query (no model), the marker and the answer, and pausing (with one
notice) on trouble. The channel is a fake ``RunChannel`` recording what reached it; the
owner is resolved by a real agent, whose database tool runs the alerts' queries on a real
SQLite database through ``SqlAlchemyRunner``."""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.reach import Person, Standing
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, StaticUserResolver
from agent_core.components import NotificationComponent, UiComponent
from agent_core.config import AgentConfig
from agent_core.database import SqlAlchemyRunner
from agent_core.schedules.model import Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.runs import Audience
from agent_core.schedules.store import ScheduleLimits
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.testing import ManualClock
from agent_core.state import MemoryTurnQueue
from agent_core.state.turns import Turn
from agent_core.tools import ToolRegistry
from agent_core.tools.sql import RunSqlTool, SqlResult
from agent_core.users import RequestContext, User
from bots.schedules.run import MarkerRefused, RunSlot, ScheduledRun
from bots.schedules.service import BotSchedules
from bots.turns import Answering
from tests.schedules.builders import COUNT_RULE, schedule, set_orders, shop

ROOMY = ScheduleLimits()
NINE = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)
ANA = User(id="slack:T1:U1", username="ana", group_memberships=["user"])


class Killed(BaseException):
    """The process dies mid-run (nothing after it runs; the turn stays pending)."""


@dataclass
class Slot:
    """Where a run posts, as the turn host sees it (nothing is recorded here)."""

    unrecorded: bool = False
    current: None = None

    async def record_again(self) -> bool:
        return True

    async def settle(self, text: str) -> None:
        return None


@dataclass
class Channel:
    """The channel's side of a run, recording what reached the channel."""

    standing: Standing = "active"
    reason: str = ""
    refuse: str | None = None
    kill_on_post: bool = False
    platform: str = "test"
    markers: list[str] = field(default_factory=list)
    notices: list[tuple[str, Audience]] = field(default_factory=list)

    async def slot(self, turn: Turn, schedule: Schedule) -> Slot:
        return Slot()

    async def alone(self, run: RunSlot[Slot]) -> bool:
        return False

    async def post_marker(
        self, turn: Turn, run: RunSlot[Slot], marker: UiComponent, *, alone: bool
    ) -> dict[str, Any]:
        if self.refuse is not None:
            raise MarkerRefused(self.refuse, self.refuse)
        if self.kill_on_post:
            self.kill_on_post = False
            raise Killed
        assert isinstance(marker.rich_component, NotificationComponent)
        self.markers.append(marker.rich_component.message)
        return {}

    async def reply(self, turn: Turn, run: RunSlot[Slot], stop: Any) -> Any:
        return None  # the turn host streams the answer; not run here

    def conversation_id(self, context: RequestContext) -> str:
        return "C1"

    async def person(self, run: RunSlot[Slot]) -> Person:
        return Person(self.standing, reason=self.reason)

    async def tell(self, run: RunSlot[Slot], text: str, audience: Audience) -> None:
        self.notices.append((text, audience))


@dataclass
class Bot:
    """A bot's schedules, its run through ``channel``, and the questions the agent was asked
    (with the marker posted before each)."""

    schedules: BotSchedules
    channel: Channel = field(default_factory=Channel)
    posts: list[tuple[str, str]] = field(default_factory=list)

    async def run(self, turn: Turn) -> str | None:
        """``turn`` run as the turn host runs it (its slot, its answer, the answer's end);
        the outcome the run kept (None: the schedule is gone, the run dropped)."""
        occurrence = Occurrence.from_payload(turn.payload)
        assert occurrence is not None
        run = ScheduledRun(self.schedules, self.channel)
        slot = await run.slot(turn, occurrence)
        if slot is None:
            return None
        answering = await run.answer(turn, slot, lambda *reason: None)
        if isinstance(answering, Answering):
            assert answering.context.metadata["scheduled_by"] == slot.schedule.id
            self.posts.append((answering.question, self.channel.markers[-1]))
            assert answering.done is not None
            await answering.done("completed")
        outcome = turn.progress.get("outcome")
        return None if outcome is None else str(outcome)


def bot(
    store: MemoryScheduleStore,
    clock: ManualClock,
    database: Path | SqlAlchemyRunner | None = None,
    channel: Channel | None = None,
    **config: object,
) -> Bot:
    """A bot whose agent resolves every owner to Ana (its ``config``: who may ask)."""
    registry = ToolRegistry()
    if isinstance(database, Path):
        database = SqlAlchemyRunner.sqlite(database)
    if database is not None:
        registry.register_local_tool(RunSqlTool(database))
    agent = Agent(
        llm_service=ScriptedLlmService([]),
        tool_registry=registry,
        user_resolver=StaticUserResolver(ANA),
        agent_memory=InMemoryAgentMemory(),
        config=AgentConfig(**config),  # type: ignore[arg-type]
    )
    state = SimpleNamespace(schedules=store, turns=MemoryTurnQueue())
    return Bot(BotSchedules(state, agent, clock=clock), channel or Channel())


def turn(
    occurrence: Occurrence, *, attempt: int = 1, progress: dict[str, Any] | None = None
) -> Turn:
    kept = progress if progress is not None else {}

    async def record(changes: dict[str, Any], at_end: bool) -> None:
        kept.update(changes)

    return Turn("1-0", "slack:T1:C1:1.0", occurrence.payload(), attempt, kept, 0.0, record)


def occurrence_of(made: Schedule, at: dt.datetime, **changes: Any) -> Occurrence:
    return Occurrence(
        schedule_id=made.id,
        due=at.timestamp(),
        at=at.timestamp(),
        dispatched_at=at.timestamp(),
        **changes,
    )


@pytest.fixture
def store() -> MemoryScheduleStore:
    return MemoryScheduleStore()


@pytest.fixture(name="shop")
def shop_file(tmp_path: Path) -> Path:
    return shop(tmp_path)


async def test_a_question_posts_with_its_marker(store: MemoryScheduleStore) -> None:
    made = schedule(next_due=NINE.timestamp())
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE + dt.timedelta(seconds=3)))
    outcome = await runs.run(turn(occurrence_of(made, NINE)))
    assert outcome == "posted"
    assert runs.posts == [(made.question, "Scheduled by @ana · every weekday 9:00")]
    kept = await store.get(made.id)
    assert kept is not None and kept.last_run is not None and kept.last_run.outcome == "posted"


async def test_a_late_run_says_how_late(store: MemoryScheduleStore) -> None:
    made = schedule(recurrence=Recurrence(frequency="hours", every=1))
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE + dt.timedelta(minutes=40)))
    await runs.run(turn(occurrence_of(made, NINE)))
    await runs.run(turn(occurrence_of(made, NINE, missed=2)))
    assert runs.posts[0][1] == "Scheduled by @ana · every hour · ran 40 min late"
    assert runs.posts[1][1].endswith(
        "ran 40 min late; 2 earlier runs were missed while Threadline was down"
    )


async def test_removed_or_paused_schedules_do_not_run(store: MemoryScheduleStore) -> None:
    made = schedule()
    runs = bot(store, ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    assert await runs.run(turn(occurrence)) is None  # removed: the run is dropped
    await store.add(made, limits=ROOMY)
    await store.pause(made.id, "by its owner")
    assert await runs.run(turn(occurrence)) == "paused"
    assert runs.posts == [] and runs.channel.notices == []


async def test_a_finished_run_is_not_repeated(store: MemoryScheduleStore) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    progress: dict[str, Any] = {}
    await runs.run(turn(occurrence, progress=progress))
    again = await runs.run(turn(occurrence, attempt=2, progress=progress))
    assert again == "posted" and len(runs.posts) == 1


async def test_a_run_that_crashed_twice_is_skipped_and_said(store: MemoryScheduleStore) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    assert await runs.run(turn(occurrence, attempt=2)) == "posted"
    assert await runs.run(turn(occurrence, attempt=3)) == "failed twice"
    ((notice, audience),) = runs.channel.notices
    assert "failed twice" in notice and "Tue 11 Mar 9:00" in notice and audience == "owner"


async def test_an_owner_who_left_pauses_it_and_the_admins_hear_once(
    store: MemoryScheduleStore,
) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    left = Channel(standing="gone", reason="was deactivated")
    runs = bot(store, ManualClock.at(NINE), channel=left)
    first, second = occurrence_of(made, NINE), occurrence_of(made, NINE + dt.timedelta(days=1))
    assert (await runs.run(turn(first)) or "").startswith("paused: @ana was deactivated")
    assert await runs.run(turn(second)) == "paused"
    assert runs.posts == []
    ((notice, audience),) = left.notices
    assert (
        audience == "admins"
        and "@ana was deactivated" in notice
        and f"/unschedule {made.id}" in notice
    )
    kept = await store.get(made.id)
    assert kept is not None and kept.status == "paused"


async def test_an_owner_who_lost_access_is_told(store: MemoryScheduleStore) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE), allowed_groups=["finance"])  # Ana is not in it
    await runs.run(turn(occurrence_of(made, NINE)))
    ((notice, audience),) = runs.channel.notices
    assert audience == "owner" and "you may no longer ask there" in notice


async def test_a_post_the_channel_refuses_pauses_it_with_one_notice(
    store: MemoryScheduleStore,
) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE), channel=Channel(refuse="not_in_channel"))
    first = occurrence_of(made, NINE)
    assert "not_in_channel" in (await runs.run(turn(first)) or "")
    await store.resume(made.id, NINE.timestamp())  # resumed while still removed: told again
    assert "not_in_channel" in (await runs.run(turn(first)) or "")
    assert [audience for _, audience in runs.channel.notices] == ["owner", "owner"]


class CountingRunner(SqlAlchemyRunner):
    """The shop's runner, counting the queries it ran."""

    queries: list[str]

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        self.queries.append(sql)
        return await super().run_sql(sql, max_rows=max_rows, timeout=timeout)


async def test_an_alert_posts_on_the_transition_only_without_the_model(
    store: MemoryScheduleStore, shop: Path
) -> None:
    made = schedule(alert=COUNT_RULE, recurrence=Recurrence(frequency="hours", every=1))
    await store.add(made, limits=ROOMY)
    database = CountingRunner.sqlite(shop)
    assert isinstance(database, CountingRunner)
    database.queries = []
    runs = bot(store, ManualClock.at(NINE), database)
    outcomes = []
    for hour, count in enumerate([150, 87, 60, 120, 99, 98]):
        set_orders(shop, count)
        outcomes.append(await runs.run(turn(occurrence_of(made, NINE + dt.timedelta(hours=hour)))))
    assert outcomes == [
        "checked: false",
        "alert fired",
        "checked: true, already told",
        "checked: false",
        "alert fired",
        "checked: true, already told",
    ]
    assert len(database.queries) == 6 and len(runs.posts) == 2  # the model answered twice
    prompt, marker = runs.posts[0]
    assert "(the value is 87)" in prompt and COUNT_RULE.sql in prompt
    assert marker == "Alert: orders < 100 · Scheduled by @ana · every hour"


async def test_an_alert_rerun_after_a_crash_still_posts_once(
    store: MemoryScheduleStore, shop: Path
) -> None:
    """The process died after the check and before the post: the re-run posts it once."""
    made = schedule(alert=COUNT_RULE, alert_state=False)
    await store.add(made, limits=ROOMY)
    set_orders(shop, 12)
    runs = bot(store, ManualClock.at(NINE), shop, channel=Channel(kill_on_post=True))
    occurrence, progress = occurrence_of(made, NINE), {}
    with pytest.raises(Killed):
        await runs.run(turn(occurrence, progress=progress))
    assert await runs.run(turn(occurrence, attempt=2, progress=progress)) == "alert fired"
    assert len(runs.posts) == 1


async def test_a_database_down_gives_one_notice_until_it_is_back(
    store: MemoryScheduleStore, shop: Path
) -> None:
    made = schedule(alert=COUNT_RULE)
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE), shop)

    async def run(hour: int) -> str | None:
        return await runs.run(turn(occurrence_of(made, NINE + dt.timedelta(hours=hour))))

    notices = runs.channel.notices
    away = shop.with_suffix(".away")
    shop.rename(away)
    assert [await run(0), await run(1), await run(2)] == ["database unavailable"] * 3
    assert len(notices) == 1 and "could not check its data" in notices[0][0]
    away.rename(shop)
    assert await run(3) == "checked: false"
    shop.rename(away)
    assert await run(4) == "database unavailable"
    assert len(notices) == 2  # down again after it came back: said again, once


async def test_an_alert_whose_value_is_not_a_number_pauses(
    store: MemoryScheduleStore, shop: Path
) -> None:
    rule = COUNT_RULE.model_copy(update={"sql": "SELECT 'many' AS orders"})
    made = schedule(alert=rule)
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE), shop)
    outcome = await runs.run(turn(occurrence_of(made, NINE)))
    assert (outcome or "").startswith("paused: its query's value cannot be compared")
    assert "'many' is not a number" in runs.channel.notices[0][0]


async def test_an_alert_query_that_writes_is_refused_and_pauses(
    store: MemoryScheduleStore, shop: Path
) -> None:
    rule = COUNT_RULE.model_copy(update={"sql": "DELETE FROM counts"})
    made = schedule(alert=rule)
    await store.add(made, limits=ROOMY)
    runs = bot(store, ManualClock.at(NINE), shop)
    outcome = await runs.run(turn(occurrence_of(made, NINE)))
    assert (outcome or "").startswith("paused: its query failed")
    db = sqlite3.connect(shop)
    assert db.execute("SELECT count(*) FROM counts").fetchone() == (1,)
    db.close()
