"""The schedule commands: made, confirmed in words with the next runs, listed, changed only
by their owner or an admin of their workspace; refusals say why and save nothing."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import pytest

from adapters.slack.render import render as slack_render
from adapters.teams.render import render as teams_render
from agent_core.components import CardComponent, UiComponent
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedLlmService, ScriptedResponse
from agent_core.schedules.authoring import AlertAuthor
from agent_core.schedules.commands import ScheduleCommand, parse_command
from agent_core.schedules.handling import Asker, ScheduleCommands
from agent_core.schedules.model import Place
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.testing import ManualClock
from agent_core.tools.sql import SqlResult
from agent_core.users import User

FRIDAY = dt.datetime(2025, 3, 7, 12, 0, tzinfo=dt.UTC)
ANA = Asker(User(id="slack:T1:U1", username="ana"), "slack:T1", "Europe/Paris", "ana")
BEN = Asker(User(id="slack:T1:U2", username="ben"), "slack:T1", "America/New_York", "ben")
ADMIN = Asker(User(id="slack:T1:U9", group_memberships=["admin"]), "slack:T1", "UTC", "boss")
OTHER_ADMIN = Asker(User(id="slack:T2:U9", group_memberships=["admin"]), "slack:T2", "UTC")
HERE = Place(thread_key="slack:T1:C1:1.0", stop_owner="T1:U1", context={"channel_id": "C1"})


def text(reply: UiComponent) -> str:
    card = reply.rich_component
    assert isinstance(card, CardComponent)
    return f"{card.title}\n{card.content}"


def buttons(reply: UiComponent) -> list[str]:
    card = reply.rich_component
    assert isinstance(card, CardComponent)
    return [action["action"] for action in card.actions]


@pytest.fixture
def store() -> MemoryScheduleStore:
    return MemoryScheduleStore()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock.at(FRIDAY)


@pytest.fixture
def commands(store: MemoryScheduleStore, clock: ManualClock) -> ScheduleCommands:
    return ScheduleCommands(store, clock=clock)


async def say(commands: ScheduleCommands, line: str, asker: Asker = ANA) -> UiComponent:
    command = parse_command(line)
    assert command is not None, line
    return await commands.handle(command, asker, HERE)


async def test_a_schedule_is_confirmed_with_its_next_three_runs(
    commands: ScheduleCommands, store: MemoryScheduleStore
) -> None:
    reply = await say(commands, "/schedule every weekday 9:00 revenue yesterday by region")
    (made,) = await store.owned_by(ANA.user.id)
    assert text(reply) == (
        "Scheduled\n"
        f"`{made.id}` · every weekday 9:00 (Europe/Paris)\n"
        "*Question:* revenue yesterday by region\n"
        "*Next runs:* Mon 10 Mar 9:00, Tue 11 Mar 9:00, Wed 12 Mar 9:00 "
        "(your time, Europe/Paris)\n"
        "It posts here, as you: your access to data applies at each run."
    )
    assert buttons(reply) == [f"/pause {made.id}", f"/unschedule {made.id}"]
    assert reply.audience == "everyone"
    assert made.place == HERE and made.owner_name == "ana"
    assert made.due_at == dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)


async def test_another_zone_shows_the_owners_time_too(commands: ScheduleCommands) -> None:
    reply = await say(commands, "/schedule every Monday 9am in Europe/Paris: signups", BEN)
    assert "Mon 10 Mar 4:00 (9:00 in Europe/Paris)" in text(reply)
    assert "(your time, America/New_York)" in text(reply)


async def test_the_mention_form(commands: ScheduleCommands, store: MemoryScheduleStore) -> None:
    command = parse_command("every Monday 9am: signups last week")
    assert command == ScheduleCommand(
        action="schedule", argument="every Monday 9am: signups last week", mention=True
    )
    await commands.handle(command, ANA, HERE)
    (made,) = await store.owned_by(ANA.user.id)
    assert made.question == "signups last week"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/schedule every weekday revenue", "At what time?"),
        ("/schedule every 1 minute ping", "minimum of every 15 minutes"),
        ("/schedule every day 9:00 in PST x", "America/Los_Angeles"),
        ("/schedule whenever you like x", "how often"),
    ],
)
async def test_refusals_say_why_with_examples_and_save_nothing(
    commands: ScheduleCommands, store: MemoryScheduleStore, line: str, says: str
) -> None:
    reply = await say(commands, line)
    assert says in text(reply) and "/schedule every weekday 9:00" in text(reply)
    assert reply.audience == "requester"
    assert await store.every() == []


async def test_the_caps(store: MemoryScheduleStore, clock: ManualClock) -> None:
    commands = ScheduleCommands(
        store, clock=clock, settings=ScheduleSettings(per_person=2, per_workspace=3)
    )
    for _ in range(2):
        await say(commands, "/schedule every day 9:00 x")
    assert "the most one person may have" in text(await say(commands, "/schedule every day 9:00 x"))
    await say(commands, "/schedule every day 9:00 x", BEN)
    assert "This workspace already has 3" in text(
        await say(commands, "/schedule every day 9:00 x", BEN)
    )
    assert len(await store.every()) == 3


async def test_listing_is_yours_and_an_admins_is_the_workspaces(
    commands: ScheduleCommands,
) -> None:
    await say(commands, "/schedule every day 9:00 mine")
    await say(commands, "/schedule every day 9:00 his", BEN)
    mine = await say(commands, "/schedules")
    assert "mine" in text(mine) and "his" not in text(mine) and mine.audience == "requester"
    assert "next Sat 8 Mar 9:00" in text(mine)
    everyone = await say(commands, "/schedules", ADMIN)
    assert "@ana" in text(everyone) and "@ben" in text(everyone)
    assert "No schedules yet" in text(await say(commands, "/schedules", OTHER_ADMIN))


async def test_only_the_owner_or_an_admin_of_its_workspace_may_change_it(
    commands: ScheduleCommands, store: MemoryScheduleStore
) -> None:
    await say(commands, "/schedule every day 9:00 x")
    (made,) = await store.owned_by(ANA.user.id)
    for stranger in (BEN, OTHER_ADMIN):
        for verb in ("/pause", "/unschedule", "/resume"):
            reply = await say(commands, f"{verb} {made.id}", stranger)
            assert "no schedule" in text(reply).lower() and reply.audience == "requester"
    kept = await store.get(made.id)
    assert kept is not None and kept.status == "active"
    assert "is removed" in text(await say(commands, f"/unschedule {made.id}", ADMIN))
    assert await store.get(made.id) is None


async def test_pause_and_resume(
    commands: ScheduleCommands, store: MemoryScheduleStore, clock: ManualClock
) -> None:
    await say(commands, "/schedule every day 9:00 x")
    (made,) = await store.owned_by(ANA.user.id)
    paused = await say(commands, f"/pause {made.id}")
    assert buttons(paused) == [f"/resume {made.id}"]
    kept = await store.get(made.id)
    assert kept is not None and kept.status == "paused" and kept.paused_reason == "paused by @ana"
    assert "paused: paused by @ana" in text(await say(commands, "/schedules"))
    clock.advance(3 * 86400)  # away for three days: resuming does not run what was missed
    resumed = await say(commands, f"/resume `{made.id}`")
    assert "next Tue 11 Mar 9:00" in text(resumed)
    kept = await store.get(made.id)
    assert kept is not None and kept.status == "active"
    assert kept.due_at == dt.datetime(2025, 3, 11, 8, 0, tzinfo=dt.UTC)


async def test_pause_all_is_for_admins(
    commands: ScheduleCommands, store: MemoryScheduleStore
) -> None:
    assert "Access Denied" in text(await say(commands, "/schedules pause-all"))
    assert await store.paused_workspaces() == frozenset()
    assert "paused" in text(await say(commands, "/schedules pause all", ADMIN))
    assert await store.paused_workspaces() == {"slack:T1"}
    await say(commands, "/schedules resume-all", ADMIN)
    assert await store.paused_workspaces() == frozenset()


def test_the_commands_under_the_one_slack_name() -> None:
    assert parse_command("/schedule list") == ScheduleCommand(action="list")
    assert parse_command("/schedule remove 5e1f0c2a") == ScheduleCommand(
        action="unschedule", argument="5e1f0c2a"
    )
    assert parse_command("/schedule pause 5E1F0C2A") == ScheduleCommand(
        action="pause", argument="5e1f0c2a"
    )
    assert parse_command("/schedule resume nope") == ScheduleCommand(
        action="usage", argument="resume"
    )
    assert parse_command("/schedule pause-all") == ScheduleCommand(action="pause_all")
    assert parse_command("/SCHEDULES") == ScheduleCommand(action="list")
    assert parse_command("/schedulex") is None
    assert parse_command("/schedule every day 9:00 pause the line") == ScheduleCommand(
        action="schedule", argument="every day 9:00 pause the line"
    )


async def test_usage_and_switched_off(store: MemoryScheduleStore) -> None:
    commands = ScheduleCommands(store)
    assert "Write when, then the question" in text(await say(commands, "/schedule"))
    assert "`/pause <id>`" in text(await say(commands, "/pause now"))
    off = ScheduleCommands(store, settings=ScheduleSettings(enabled=False))
    assert "turned off" in text(await say(off, "/schedule every day 9:00 x"))
    assert await store.every() == []


async def test_hostile_text_is_escaped_by_the_renderers(commands: ScheduleCommands) -> None:
    reply = await say(commands, "/schedule every day 9:00 <!channel> <@U2> &lt; revenue")
    posted = json.dumps([m.blocks for m in slack_render(reply)])
    assert "<!channel>" not in posted and "&lt;!channel&gt;" in posted
    rendering = teams_render(reply)
    assert rendering is not None and "<!channel>" in json.dumps(rendering.card)


def shop(tmp_path: Path) -> SqlAlchemyRunner:
    path = tmp_path / "shop.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE orders (day TEXT, id INTEGER);")
    db.executemany("INSERT INTO orders VALUES ('2025-03-06', ?)", [(i,) for i in range(87)])
    db.commit()
    db.close()
    return SqlAlchemyRunner.sqlite(path)


def author_for(
    runner: SqlAlchemyRunner, *responses: object
) -> tuple[AlertAuthor, ScriptedLlmService]:
    llm = ScriptedLlmService(list(responses))

    async def query(owner: User, sql: str) -> SqlResult:
        return await runner.run_sql(sql)

    async def schema(owner: User) -> str:
        return await runner.describe()

    return AlertAuthor(llm, query=query, schema=schema, dialect=runner.dialect), llm


RULE = {
    "sql": "SELECT count(*) AS orders FROM orders WHERE day = '2025-03-06'",
    "column": "orders",
    "operator": "<",
    "threshold": 100,
}


async def test_an_alert_is_written_once_and_waits_for_confirmation(
    store: MemoryScheduleStore, clock: ManualClock, tmp_path: Path
) -> None:
    author, llm = author_for(shop(tmp_path), ScriptedResponse.tool("alert_rule", RULE))
    commands = ScheduleCommands(store, clock=clock, author=author)
    reply = await say(commands, "/schedule every hour when yesterday's orders drop below 100")
    (draft,) = await store.owned_by(ANA.user.id)
    assert draft.status == "draft" and draft.alert is not None
    assert (
        draft.alert.sql == RULE["sql"]
        and draft.alert.condition == "yesterday's orders drop below 100"
    )
    shown = text(reply)
    assert "orders < 100 (now: 87, so it holds)" in shown and RULE["sql"] in shown
    assert buttons(reply) == [f"/resume {draft.id}", f"/unschedule {draft.id}"]
    (request,) = llm.requests
    assert "CREATE TABLE orders" in (request.system_prompt or "")
    assert request.tools is not None and request.tools[0].name == "alert_rule"
    assert await store.due(10**10, limit=10) == []  # nothing runs before it is confirmed
    assert "Alert confirmed" in text(await say(commands, f"/resume {draft.id}"))
    assert [s.id for s in await store.due(10**10, limit=10)] == [draft.id]


async def test_a_failing_rule_goes_back_to_the_model_once_then_is_refused(
    store: MemoryScheduleStore, clock: ManualClock, tmp_path: Path
) -> None:
    broken = {**RULE, "sql": "SELECT count(*) AS orders FROM nowhere"}
    author, llm = author_for(
        shop(tmp_path),
        ScriptedResponse.tool("alert_rule", broken),
        ScriptedResponse.tool("alert_rule", RULE),
    )
    commands = ScheduleCommands(store, clock=clock, author=author)
    await say(commands, "/schedule every hour when orders drop below 100")
    assert len(llm.requests) == 2 and "nowhere" in llm.requests[1].messages[-1].content
    assert len(await store.every()) == 1

    author, _ = author_for(
        SqlAlchemyRunner.sqlite(tmp_path / "shop.db"),
        ScriptedResponse.tool("alert_rule", broken),
        ScriptedResponse.tool("alert_rule", {**RULE, "sql": "DELETE FROM orders"}),
    )
    commands = ScheduleCommands(MemoryScheduleStore(), clock=clock, author=author)
    reply = await say(commands, "/schedule every hour when orders drop below 100")
    assert "I could not turn" in text(reply) and "read" in text(reply).lower()


async def test_alerts_need_a_database(commands: ScheduleCommands) -> None:
    reply = await say(commands, "/schedule every hour when orders drop below 100")
    assert "need a database" in text(reply)


async def test_a_rerun_of_the_turn_that_made_a_schedule_makes_no_second_one(
    commands: ScheduleCommands, store: MemoryScheduleStore
) -> None:
    """A crash after the schedule was saved and before the reply: the re-run (same turn, so
    the same ``new_id``) confirms the schedule it made, never a second one."""
    command = parse_command("/schedule every day 9:00 revenue")
    assert command is not None
    first = await commands.handle(command, ANA, HERE, new_id="0badcafe")
    again = await commands.handle(command, ANA, HERE, new_id="0badcafe")
    assert [s.id for s in await store.every()] == ["0badcafe"]
    assert text(first) == text(again)
    # the id is not a way into someone else's schedule: theirs gets a fresh one
    await commands.handle(command, BEN, HERE, new_id="0badcafe")
    (kept,) = await store.owned_by(ANA.user.id)
    (bens,) = await store.owned_by(BEN.user.id)
    assert kept.id == "0badcafe" and bens.id != "0badcafe"


async def test_a_random_id_already_taken_is_drawn_again(
    commands: ScheduleCommands, store: MemoryScheduleStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids are 32 random bits: two schedules may draw the same one. The second is saved
    under a fresh id, and the first is untouched."""
    command = parse_command("/schedule every day 9:00 revenue")
    assert command is not None
    await commands.handle(command, ANA, HERE, new_id="0badcafe")
    draws = iter(["0badcafe", "0badcafe", "feedf00d"])
    monkeypatch.setattr("agent_core.schedules.handling.new_schedule_id", lambda: next(draws))
    reply = await commands.handle(command, BEN, HERE)
    (bens,) = await store.owned_by(BEN.user.id)
    assert bens.id == "feedf00d" and "`feedf00d`" in text(reply)
    (anas,) = await store.owned_by(ANA.user.id)
    assert anas.id == "0badcafe" and anas.owner == ANA.user.id
