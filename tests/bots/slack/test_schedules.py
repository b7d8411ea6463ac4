"""Scheduled questions and alerts through the real Slack bot (bolt, the turn host, the
adapters) and the shipped fake Web API, on an injected clock: nothing sleeps for minutes."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from adapters.slack.elements import ACTION_BUTTON
from adapters.slack.testing import Call, FakeSlackApi, Message, Reply
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse, ScriptEntry
from agent_core.schedules.dispatcher import DispatchReport
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.testing import ManualClock
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.tools.sql import RunSqlTool
from bots.slack.app import build_web_app
from bots.slack.bot import SlackBot
from bots.slack.clients import build_user_resolver, default_clients
from bots.slack.settings import SlackSettings
from tests.bots.slack.agents import build_agent
from tests.bots.slack.harness import SECRET, TOKEN, SlackHarness, add_users
from tests.schedules.builders import RULE, set_orders, shop

# Friday 7 March 2025, 12:00 in Paris (CET, UTC+1)
FRIDAY_NOON = dt.datetime(2025, 3, 7, 11, 0, tzinfo=dt.UTC)
MONDAY_9 = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)


class Scheduling:
    """A Slack bot whose schedules run on ``clock``: ``at(moment)`` moves time and waits
    for the dispatcher's tick and the turns it made."""

    def __init__(
        self, harness: SlackHarness, clock: ManualClock, ticks: asyncio.Queue[DispatchReport]
    ) -> None:
        self.harness = harness
        self.clock = clock
        self.ticks = ticks

    @property
    def fake(self) -> FakeSlackApi:
        return self.harness.fake

    async def at(self, moment: dt.datetime) -> DispatchReport:
        """Move the clock to ``moment`` once the dispatcher sleeps; its next tick's report,
        after the turns it made are answered. The dispatcher must wake by then: a run is
        due, or its poll (an hour here) has passed."""
        await self.settle()
        self.clock.set(moment.timestamp())
        report = await self.ticks.get()
        while report.at < self.clock.now():  # a tick woken before (a schedule made, resumed)
            report = await self.ticks.get()
        await self.harness.idle()
        return report

    async def settle(self) -> None:
        """Until the dispatcher has ticked what it was woken for and sleeps again."""
        await self.clock.sleeping()
        while not self.ticks.empty():
            self.ticks.get_nowait()

    async def schedule(self, text: str, *, user: str = "U1", channel: str = "C1") -> str:
        """``/schedule text`` as Slack sends it; the reply the asker alone sees."""
        await self.harness.command(text, user=user, channel=channel, command="/schedule")
        await self.harness.idle()
        return private_text(self.fake)[-1]

    async def click(self, command: str, *, user: str = "U1", channel: str = "C1") -> None:
        await self.harness.action(f"{ACTION_BUTTON}:0", command, user=user, channel=channel)
        await self.harness.idle()


def private_text(fake: FakeSlackApi) -> list[str]:
    """What went to one person alone (ephemeral messages, response_url posts)."""
    found = [c for c in fake.calls if c.method in ("chat.postEphemeral", "response_url")]
    return [_text_of(call) for call in found]


def _text_of(call: Call) -> str:
    blocks = call.args.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return json.dumps(blocks or []) + str(call.args.get("text") or "")


def markers(fake: FakeSlackApi, channel: str = "C1") -> list[Message]:
    return [m for m in fake.visible(channel) if "Scheduled by" in (m.text or "")]


def dms(fake: FakeSlackApi, user: str) -> list[str]:
    return [m.text or "" for m in fake.messages if m.channel == user]


@asynccontextmanager
async def scheduling_bot(
    tmp_path: Path,
    script: Sequence[ScriptEntry] = (),
    *,
    clock: ManualClock,
    state: State | None = None,
    fake: FakeSlackApi | None = None,
    agent: Any = None,
    then: ScriptEntry | None = "Revenue yesterday: 1,234 EUR.",
    poll: float = 3600,
) -> AsyncIterator[Scheduling]:
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(FakeSlackApi())
            add_users(fake)
            fake.users["U1"]["tz"] = "Europe/Paris"
        settings = SlackSettings(
            bot_token=TOKEN,
            signing_secret=SECRET,
            api_url=fake.base_url,
            admin_users=["UADMIN"],
            group_map={"S1": ["analysts"]},  # groups are granted by id (issue 22.1)
            stream_interval=0,
            stop_button_after=60,
        )
        state = state or build_state(StateSettings(ephemeral=True))
        clients = default_clients(settings, state)
        resolver = build_user_resolver(settings, clients, state.cache)
        served = (
            agent(resolver, state)
            if agent is not None
            else build_agent(
                script, resolver, then=then, memory=state.memory, conversations=state.conversations
            )
        )
        bot = SlackBot(
            served,
            settings,
            state=state,
            clients=clients,
            schedules=ScheduleSettings(poll=poll),
            clock=clock,
        )
        ticks: asyncio.Queue[DispatchReport] = asyncio.Queue()
        bot.schedules.dispatcher.on_tick = ticks.put_nowait  # before its first look
        await bot.open()
        try:
            async with TestClient(TestServer(build_web_app(bot))) as http:
                yield Scheduling(SlackHarness(fake, bot, http), clock, ticks)
        finally:
            await bot.close(timeout=0)


async def test_a_weekday_schedule_posts_at_its_times_in_the_owners_zone(tmp_path: Path) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        confirmation = await bot.schedule("every weekday 9:00 revenue yesterday by region")
        assert "Mon 10 Mar 9:00, Tue 11 Mar 9:00, Wed 12 Mar 9:00" in confirmation
        assert "Europe/Paris" in confirmation
        assert markers(bot.fake) == []

        for day in (1, 2):  # the weekend: nothing is due
            report = await bot.at(FRIDAY_NOON + dt.timedelta(days=day))
            assert report.total == 0
        assert (await bot.at(MONDAY_9)).enqueued == 1
        (monday,) = markers(bot.fake)
        assert "Scheduled by @Ana · every weekday 9:00" in (monday.text or "")
        answer = bot.fake.thread("C1", monday.ts)
        assert any("1,234 EUR" in (m.text or "") for m in answer)
        assert bot.harness.llm_questions()[-1].endswith("revenue yesterday by region")

        assert (await bot.at(MONDAY_9 + dt.timedelta(hours=1))).total == 0
        assert (await bot.at(MONDAY_9 + dt.timedelta(days=1))).enqueued == 1
        assert len(markers(bot.fake)) == 2


async def test_refusals_say_why_and_the_pause_button_pauses(tmp_path: Path) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        refused = await bot.schedule("every 1 minute ping")
        assert "minimum of every 15 minutes" in refused and "/schedule every weekday" in refused
        assert await bot.harness.bot.schedules.store.every() == []
        await bot.schedule("every weekday 9:00 revenue")
        (made,) = await bot.harness.bot.schedules.store.every()
        await bot.at(MONDAY_9)
        (marker,) = markers(bot.fake)
        assert f"/pause {made.id}" in json.dumps(marker.blocks)

        await bot.click(f"/pause {made.id}", user="U2")  # not theirs: refused, still runs
        assert "no schedule" in bot.fake.visible("C1")[-1].text.lower() or any(
            "no schedule" in t.lower() for t in private_text(bot.fake)
        )
        kept = await bot.harness.bot.schedules.store.get(made.id)
        assert kept is not None and kept.status == "active"
        await bot.click(f"/pause {made.id}")  # the owner's click pauses it
        kept = await bot.harness.bot.schedules.store.get(made.id)
        assert kept is not None and kept.status == "paused"
        assert (await bot.at(MONDAY_9 + dt.timedelta(days=1))).total == 0
        assert len(markers(bot.fake)) == 1


async def test_after_a_two_hour_outage_the_missed_run_happens_once(tmp_path: Path) -> None:
    state = build_state(StateSettings(data_dir=tmp_path / "state"))
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    async with contextlib.AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeSlackApi())
        add_users(fake)
        fake.users["U1"]["tz"] = "Europe/Paris"
        async with scheduling_bot(tmp_path, clock=clock, state=state, fake=fake) as bot:
            await bot.schedule("every hour revenue this hour")
            assert (await bot.at(MONDAY_9)).enqueued == 1
        # the bot is down from 9:00 to 11:10: the 10:00 and 11:00 runs are missed
        clock.set((MONDAY_9 + dt.timedelta(hours=2, minutes=10)).timestamp())
        async with scheduling_bot(tmp_path, clock=clock, state=state, fake=fake) as bot:
            report = await bot.ticks.get()  # the first look after the start
            await bot.harness.idle()
            assert report.enqueued == 1
            late = markers(fake)[-1].text or ""
            assert "ran 10 min late; 1 earlier run was missed" in late  # 10:00 (11:00 ran)
            assert len(markers(fake)) == 2
            assert (await bot.at(MONDAY_9 + dt.timedelta(hours=3))).enqueued == 1  # 12:00
            assert "late" not in (markers(fake)[-1].text or "")
            assert len(markers(fake)) == 3
    await state.aclose()


async def test_a_deactivated_owner_pauses_it_and_the_admins_hear_once(tmp_path: Path) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue")
        bot.fake.users["U1"]["deleted"] = True
        await bot.at(MONDAY_9)
        await bot.at(MONDAY_9 + dt.timedelta(days=1))
        assert markers(bot.fake) == []
        (told,) = dms(bot.fake, "UADMIN")
        assert "@Ana was deactivated" in told and "/unschedule" in told
        (paused,) = await bot.harness.bot.schedules.store.every()
        assert paused.status == "paused"


async def test_not_in_channel_pauses_it_and_the_owner_hears_once(tmp_path: Path) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue")
        bot.fake.script("chat.postMessage", Reply(error="not_in_channel"))
        await bot.at(MONDAY_9)
        (told,) = dms(bot.fake, "U1")
        assert "I am no longer in that channel (not_in_channel)" in told
        assert "/resume" in told
        assert (await bot.at(MONDAY_9 + dt.timedelta(days=1))).total == 0
        assert len(dms(bot.fake, "U1")) == 1


def data_agent(path: Path, llm: ScriptedLlmService) -> Any:
    def build(resolver: UserResolver, state: State) -> Agent:
        registry = ToolRegistry()
        registry.register_local_tool(
            RunSqlTool(SqlAlchemyRunner.sqlite(path)), access_groups=["analysts"]
        )
        return Agent(
            llm_service=llm,
            tool_registry=registry,
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
            conversation_store=state.conversations,
        )

    return build


async def test_an_alert_posts_on_the_transition_only(tmp_path: Path) -> None:
    path = shop(tmp_path)
    llm = ScriptedLlmService(
        [ScriptedResponse.tool("alert_rule", RULE)], then="Orders fell to the 80s today."
    )
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(hours=1))
    async with scheduling_bot(tmp_path, clock=clock, agent=data_agent(path, llm)) as bot:
        draft = await bot.schedule("every hour when orders today drop below 100")
        # the condition reaches Slack escaped (issue 22.7): Slack shows "orders < 100"
        assert "orders &lt; 100 (now: 150" in draft and "Confirm" in draft
        (alert,) = await bot.harness.bot.schedules.store.every()
        assert (await bot.at(MONDAY_9)).total == 0  # not confirmed: nothing runs
        await bot.click(f"/resume {alert.id}")
        calls = len(llm.requests)
        for hour, count in enumerate([150, 87, 60, 120, 95], start=1):
            set_orders(path, count)
            await bot.at(MONDAY_9 + dt.timedelta(hours=hour))
        fired = markers(bot.fake)
        assert len(fired) == 2  # 87 (was 150) and 95 (was 120); not 60 (still below)
        assert all("Alert: orders &lt; 100" in (m.text or "") for m in fired)
        assert len(llm.requests) - calls == 2  # the model only explains what fired


async def test_the_owners_data_access_applies_at_run_time(tmp_path: Path) -> None:
    path = shop(tmp_path)
    llm = ScriptedLlmService([ScriptedResponse.tool("alert_rule", RULE)], then="Explained.")
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    async with scheduling_bot(tmp_path, clock=clock, agent=data_agent(path, llm)) as bot:
        await bot.schedule("every hour when orders today drop below 100")
        (alert,) = await bot.harness.bot.schedules.store.every()
        await bot.click(f"/resume {alert.id}")
        # Ana leaves the analysts group: Slack says so, and the identity cache forgets her
        bot.fake.usergroups = [{"id": "S1", "handle": "analysts", "users": ["UADMIN"]}]
        await bot.harness.event({"type": "subteam_members_changed", "subteam_id": "S1"})
        set_orders(path, 12)
        await bot.at(MONDAY_9 + dt.timedelta(hours=1))
        assert markers(bot.fake) == []
        (told,) = dms(bot.fake, "U1")
        assert "you may no longer query this database" in told
        kept = await bot.harness.bot.schedules.store.get(alert.id)
        assert kept is not None and kept.status == "paused"


async def test_two_processes_on_redis_run_each_occurrence_once(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    """Two bot processes (their own Redis clients and clocks, 5 s apart) share one Slack."""
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=1))
    async with contextlib.AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeSlackApi())
        add_users(fake)
        bots = []
        # A process looks at least every minute: the one where nothing was scheduled has
        # no wake of its own, so both contend for each occurrence.
        for skew in (5.0, 0.0):
            state = build_state(StateSettings(redis_url=redis_url, key_prefix=key_prefix))
            stack.push_async_callback(state.aclose)
            bots.append(
                await stack.enter_async_context(
                    scheduling_bot(
                        tmp_path, clock=clock.skewed(skew), state=state, fake=fake, poll=60
                    )
                )
            )
        first, second = bots
        for n in range(5):
            await first.schedule(f"every 15 minutes question {n}")
        for quarter in range(4):
            moment = MONDAY_9 + dt.timedelta(minutes=15 * quarter)
            await clock.sleeping(2)  # both dispatchers wait for the time to come
            for bot in bots:
                while not bot.ticks.empty():
                    bot.ticks.get_nowait()
            clock.set(moment.timestamp())
            await asyncio.gather(first.ticks.get(), second.ticks.get())
            await asyncio.gather(first.harness.idle(), second.harness.idle())
        assert len(markers(fake)) == 5 * 4


async def test_the_owners_quota_applies_to_scheduled_runs(tmp_path: Path) -> None:
    """A run asks as its owner: their quota refuses it like a question (no model call)."""
    from agent_core.state.quotas import MemoryRateLimiter, RateLimitHook

    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        agent = bot.harness.agent
        agent.lifecycle_hooks.append(RateLimitHook(MemoryRateLimiter(), limit=1, window=7 * 86400))
        await bot.schedule("every weekday 9:00 revenue yesterday")
        await bot.at(MONDAY_9)
        calls = len(agent.llm_service.requests)  # type: ignore[attr-defined]
        await bot.at(MONDAY_9 + dt.timedelta(days=1))
        tuesday = markers(bot.fake)[-1]
        said = " ".join(m.text or "" for m in bot.fake.thread("C1", tuesday.ts))
        assert "reached your limit of 1 messages" in said
        assert len(agent.llm_service.requests) == calls  # type: ignore[attr-defined]


async def test_schedule_run_runs_it_once_now_and_it_still_runs_at_its_time(
    tmp_path: Path,
) -> None:
    """``/schedule run <id>`` (issue 40's Run now): one run now, as the owner, posted where
    the schedule posts; Monday's run still happens. Bo's and a paused one's run nothing."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue yesterday")
        (made,) = await bot.harness.bot.schedules.store.every()
        said = await bot.schedule(f"run {made.id}", user="U2")
        assert "no schedule" in said.lower()
        assert markers(bot.fake) == [] and bot.harness.llm_questions() == []

        said = await bot.schedule(f"run {made.id}")
        assert "Running now" in said and "Mon 10 Mar 9:00" in said
        assert "runs as" not in said  # her own
        (now,) = markers(bot.fake)
        assert "Scheduled by @Ana" in (now.text or "")
        assert any("1,234 EUR" in (m.text or "") for m in bot.fake.thread("C1", now.ts))
        assert bot.harness.llm_questions()[-1].endswith("revenue yesterday")

        assert (await bot.at(MONDAY_9)).enqueued == 1  # its time is unchanged
        assert len(markers(bot.fake)) == 2
        said = await bot.schedule(f"run {made.id}", user="UADMIN")  # an admin's Run now
        assert "Running now" in said and "It runs as @Ana, with their access" in said
        await bot.harness.idle()
        assert "Scheduled by @Ana" in (markers(bot.fake)[-1].text or "")
        assert len(markers(bot.fake)) == 3
        await bot.schedule(f"pause {made.id}")
        said = await bot.schedule(f"run {made.id}")
        assert "is paused, so it does not run" in said
        await bot.harness.idle()
        assert len(markers(bot.fake)) == 3


async def test_forget_removes_their_schedules_and_each_place_hears_once(tmp_path: Path) -> None:
    """``forget`` queues one line per removed schedule on the turn queue; the bot's worker
    posts it into the schedule's place, without naming the erased person."""
    from agent_core.forget import forget_person

    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue yesterday", channel="C1")
        await bot.schedule("every weekday 10:00 orders yesterday", channel="C2")
        first, second = await bot.harness.bot.schedules.store.every()
        state = bot.harness.bot.state
        for _ in range(2):  # a rerun (the CLI run twice) tells nobody again
            await forget_person(state, [first.owner], given="ana")
            await bot.harness.idle()
        assert await state.schedules.every() == []
        for made in (first, second):
            channel = str(made.place.context["channel_id"])
            told = [m for m in bot.fake.visible(channel) if "was removed" in (m.text or "")]
            assert len(told) == 1, told
            assert made.id in (told[0].text or "") and "Ana" not in (told[0].text or "")
        assert (await bot.at(MONDAY_9)).enqueued == 0  # nothing runs any more
