"""One scheduled run: the owner again, the alert's query (no model), the post, and pausing
(with one notice) on trouble. The host is the channel seam; its queries run on a real
SQLite database through ``SqlAlchemyRunner``."""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_core.database import SqlAlchemyRunner
from agent_core.schedules.model import Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.runs import (
    Ask,
    Audience,
    DeliveryError,
    OwnerCheck,
    ScheduleRunner,
)
from agent_core.schedules.store import ScheduleLimits
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.testing import ManualClock
from agent_core.state.turns import Turn
from agent_core.tools.sql import SqlResult
from agent_core.users import User
from tests.schedules.builders import COUNT_RULE, schedule, set_orders, shop

ROOMY = ScheduleLimits()
NINE = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)
ANA = User(id="slack:T1:U1", username="ana", group_memberships=["user"])


class Killed(BaseException):
    """The process dies mid-run (nothing after it runs; the turn stays pending)."""


@dataclass
class Host:
    """The channel's side of a run, recording what reached the channel."""

    runner: SqlAlchemyRunner | None = None
    owner: OwnerCheck = field(default_factory=lambda: OwnerCheck("active", ANA))
    refuse: str | None = None
    kill_on_answer: bool = False
    posts: list[tuple[str, str]] = field(default_factory=list)
    notices: list[tuple[str, Audience]] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)

    async def check_owner(self, schedule: Schedule) -> OwnerCheck:
        return self.owner

    async def answer(self, ask: Ask) -> None:
        if self.refuse is not None:
            raise DeliveryError(self.refuse)
        if self.kill_on_answer:
            self.kill_on_answer = False
            raise Killed
        assert ask.owner == self.owner.user
        self.posts.append((ask.prompt, ask.marker))

    async def query(self, schedule: Schedule, owner: User, sql: str) -> SqlResult:
        assert self.runner is not None
        self.queries.append(sql)
        return await self.runner.run_sql(sql)

    async def tell(self, schedule: Schedule, text: str, *, audience: Audience) -> None:
        self.notices.append((text, audience))


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
    host, clock = Host(), ManualClock.at(NINE + dt.timedelta(seconds=3))
    outcome = await ScheduleRunner(store, clock=clock).run(
        turn(occurrence_of(made, NINE)), occurrence_of(made, NINE), host
    )
    assert outcome == "posted"
    assert host.posts == [(made.question, "Scheduled by @ana · every weekday 9:00")]
    kept = await store.get(made.id)
    assert kept is not None and kept.last_run is not None and kept.last_run.outcome == "posted"


async def test_a_late_run_says_how_late(store: MemoryScheduleStore) -> None:
    made = schedule(recurrence=Recurrence(frequency="hours", every=1))
    await store.add(made, limits=ROOMY)
    host = Host()
    clock = ManualClock.at(NINE + dt.timedelta(minutes=40))
    late = occurrence_of(made, NINE)
    await ScheduleRunner(store, clock=clock).run(turn(late), late, host)
    missed = occurrence_of(made, NINE, missed=2)
    await ScheduleRunner(store, clock=clock).run(turn(missed), missed, host)
    assert host.posts[0][1] == "Scheduled by @ana · every hour · ran 40 min late"
    assert host.posts[1][1].endswith(
        "ran 40 min late; 2 earlier runs were missed while Threadline was down"
    )


async def test_removed_or_paused_schedules_do_not_run(store: MemoryScheduleStore) -> None:
    made = schedule()
    host, runner = Host(), ScheduleRunner(store, clock=ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    assert await runner.run(turn(occurrence), occurrence, host) == "removed"
    await store.add(made, limits=ROOMY)
    await store.pause(made.id, "by its owner")
    assert await runner.run(turn(occurrence), occurrence, host) == "paused"
    assert host.posts == [] and host.notices == []


async def test_a_finished_run_is_not_repeated(store: MemoryScheduleStore) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    host, runner = Host(), ScheduleRunner(store, clock=ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    progress: dict[str, Any] = {}
    await runner.run(turn(occurrence, progress=progress), occurrence, host)
    again = await runner.run(turn(occurrence, attempt=2, progress=progress), occurrence, host)
    assert again == "posted" and len(host.posts) == 1


async def test_a_run_that_crashed_twice_is_skipped_and_said(store: MemoryScheduleStore) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    host, runner = Host(), ScheduleRunner(store, clock=ManualClock.at(NINE))
    occurrence = occurrence_of(made, NINE)
    assert await runner.run(turn(occurrence, attempt=2), occurrence, host) == "posted"
    assert await runner.run(turn(occurrence, attempt=3), occurrence, host) == "failed twice"
    ((notice, audience),) = host.notices
    assert "failed twice" in notice and "Tue 11 Mar 9:00" in notice and audience == "owner"


async def test_an_owner_who_left_pauses_it_and_the_admins_hear_once(
    store: MemoryScheduleStore,
) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    host = Host(owner=OwnerCheck("gone", reason="was deactivated"))
    runner = ScheduleRunner(store, clock=ManualClock.at(NINE))
    first, second = occurrence_of(made, NINE), occurrence_of(made, NINE + dt.timedelta(days=1))
    assert (await runner.run(turn(first), first, host)).startswith("paused: @ana was deactivated")
    assert await runner.run(turn(second), second, host) == "paused"
    assert host.posts == []
    ((notice, audience),) = host.notices
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
    host = Host(owner=OwnerCheck("no_access", reason="you may no longer ask in that channel"))
    occurrence = occurrence_of(made, NINE)
    await ScheduleRunner(store, clock=ManualClock.at(NINE)).run(turn(occurrence), occurrence, host)
    ((notice, audience),) = host.notices
    assert audience == "owner" and "you may no longer ask in that channel" in notice


async def test_a_post_the_channel_refuses_pauses_it_with_one_notice(
    store: MemoryScheduleStore,
) -> None:
    made = schedule()
    await store.add(made, limits=ROOMY)
    host = Host(refuse="not_in_channel")
    runner = ScheduleRunner(store, clock=ManualClock.at(NINE))
    first = occurrence_of(made, NINE)
    assert "not_in_channel" in await runner.run(turn(first), first, host)
    await store.resume(made.id, NINE.timestamp())  # resumed while still removed: told again
    assert "not_in_channel" in await runner.run(turn(first), first, host)
    assert [audience for _, audience in host.notices] == ["owner", "owner"]


async def test_an_alert_posts_on_the_transition_only_without_the_model(
    store: MemoryScheduleStore, shop: Path
) -> None:
    made = schedule(alert=COUNT_RULE, recurrence=Recurrence(frequency="hours", every=1))
    await store.add(made, limits=ROOMY)
    host = Host(runner=SqlAlchemyRunner.sqlite(shop))
    runner = ScheduleRunner(store, clock=ManualClock.at(NINE))
    outcomes = []
    for hour, count in enumerate([150, 87, 60, 120, 99, 98]):
        set_orders(shop, count)
        occurrence = occurrence_of(made, NINE + dt.timedelta(hours=hour))
        outcomes.append(await runner.run(turn(occurrence), occurrence, host))
    assert outcomes == [
        "checked: false",
        "alert fired",
        "checked: true, already told",
        "checked: false",
        "alert fired",
        "checked: true, already told",
    ]
    assert len(host.queries) == 6 and len(host.posts) == 2  # the model answered twice
    prompt, marker = host.posts[0]
    assert "(the value is 87)" in prompt and COUNT_RULE.sql in prompt
    assert marker == "Alert: orders < 100 · Scheduled by @ana · every hour"


async def test_an_alert_rerun_after_a_crash_still_posts_once(
    store: MemoryScheduleStore, shop: Path
) -> None:
    """The process died after the check and before the post: the re-run posts it once."""
    made = schedule(alert=COUNT_RULE, alert_state=False)
    await store.add(made, limits=ROOMY)
    set_orders(shop, 12)
    host = Host(runner=SqlAlchemyRunner.sqlite(shop), kill_on_answer=True)
    runner = ScheduleRunner(store, clock=ManualClock.at(NINE))
    occurrence, progress = occurrence_of(made, NINE), {}
    with pytest.raises(Killed):
        await runner.run(turn(occurrence, progress=progress), occurrence, host)
    rerun = turn(occurrence, attempt=2, progress=progress)
    assert await runner.run(rerun, occurrence, host) == "alert fired"
    assert len(host.posts) == 1


async def test_a_database_down_gives_one_notice_until_it_is_back(
    store: MemoryScheduleStore, shop: Path
) -> None:
    made = schedule(alert=COUNT_RULE)
    await store.add(made, limits=ROOMY)
    host = Host(runner=SqlAlchemyRunner.sqlite(shop))
    runner = ScheduleRunner(store, clock=ManualClock.at(NINE))

    async def run(hour: int) -> str:
        occurrence = occurrence_of(made, NINE + dt.timedelta(hours=hour))
        return await runner.run(turn(occurrence), occurrence, host)

    away = shop.with_suffix(".away")
    shop.rename(away)
    assert [await run(0), await run(1), await run(2)] == ["database unavailable"] * 3
    assert len(host.notices) == 1 and "could not check its data" in host.notices[0][0]
    away.rename(shop)
    assert await run(3) == "checked: false"
    shop.rename(away)
    assert await run(4) == "database unavailable"
    assert len(host.notices) == 2  # down again after it came back: said again, once


async def test_an_alert_whose_value_is_not_a_number_pauses(
    store: MemoryScheduleStore, shop: Path
) -> None:
    rule = COUNT_RULE.model_copy(update={"sql": "SELECT 'many' AS orders"})
    made = schedule(alert=rule)
    await store.add(made, limits=ROOMY)
    host = Host(runner=SqlAlchemyRunner.sqlite(shop))
    occurrence = occurrence_of(made, NINE)
    outcome = await ScheduleRunner(store, clock=ManualClock.at(NINE)).run(
        turn(occurrence), occurrence, host
    )
    assert outcome.startswith("paused: its query's value cannot be compared")
    assert "'many' is not a number" in host.notices[0][0]


async def test_an_alert_query_that_writes_is_refused_and_pauses(
    store: MemoryScheduleStore, shop: Path
) -> None:
    rule = COUNT_RULE.model_copy(update={"sql": "DELETE FROM counts"})
    made = schedule(alert=rule)
    await store.add(made, limits=ROOMY)
    host = Host(runner=SqlAlchemyRunner.sqlite(shop))
    occurrence = occurrence_of(made, NINE)
    outcome = await ScheduleRunner(store, clock=ManualClock.at(NINE)).run(
        turn(occurrence), occurrence, host
    )
    assert outcome.startswith("paused: its query failed")
    db = sqlite3.connect(shop)
    assert db.execute("SELECT count(*) FROM counts").fetchone() == (1,)
    db.close()
