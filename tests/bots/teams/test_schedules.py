"""Scheduled questions and alerts through the real Teams bot (JWT-verified /api/messages, the
turn host, proactive messages through the stored conversation reference) and the shipped
fake Bot Connector, on an injected clock."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msal
import pytest
from aiohttp.test_utils import TestClient, TestServer
from botframework.connector.auth import ManagedIdentityAppCredentials

from adapters.fetch import FetchPolicy
from adapters.teams.files import FileOffers
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse
from agent_core.schedules.dispatcher import DispatchReport
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.testing import ManualClock
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.tools.sql import RunSqlTool
from bots.teams.app import build_web_app
from bots.teams.bot import TeamsBot, user_resolver
from bots.teams.connector import ConnectorPool
from tests.bots.teams.agents import build_agent
from tests.bots.teams.harness import ADMIN, TeamsHarness, add_members, settings_for
from tests.schedules.builders import RULE, set_orders, shop

FRIDAY_NOON = dt.datetime(2025, 3, 7, 11, 0, tzinfo=dt.UTC)  # 12:00 in Paris
MONDAY_9 = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)  # 9:00 in Paris


class Scheduling:
    """A Teams bot whose schedules run on ``clock`` (see the Slack twin of this module)."""

    def __init__(
        self, harness: TeamsHarness, clock: ManualClock, ticks: asyncio.Queue[DispatchReport]
    ) -> None:
        self.harness = harness
        self.clock = clock
        self.ticks = ticks

    @property
    def fake(self) -> FakeBotConnector:
        return self.harness.fake

    async def settle(self) -> None:
        await self.clock.sleeping()
        while not self.ticks.empty():
            self.ticks.get_nowait()

    async def at(self, moment: dt.datetime) -> DispatchReport:
        await self.settle()
        self.clock.set(moment.timestamp())
        report = await self.ticks.get()
        while report.at < self.clock.now():
            report = await self.ticks.get()
        await self.harness.host.idle()
        return report

    async def say(self, text: str, **kwargs: Any) -> str:
        """A message as Teams posts it (from Paris); the bot's reply."""
        activity = self.harness.message(text, **kwargs)
        activity["localTimezone"] = "Europe/Paris"
        response = await self.harness.post(activity)
        assert response.status in (200, 201)
        await self.harness.host.idle()
        return _text(self.fake.calls[-1])

    async def click(self, command: str, **kwargs: Any) -> None:
        value = {"action": {"verb": "threadline.action", "data": {"threadline_action": command}}}
        await self.harness.post(self.harness.invoke("adaptiveCard/action", value, **kwargs))
        await self.harness.host.idle()


def _text(call: ConnectorCall) -> str:
    return json.dumps(call.body or {}, ensure_ascii=False)


def markers(fake: FakeBotConnector) -> list[ConnectorCall]:
    return [
        c
        for c in fake.calls
        if c.operation == "send_to_conversation" and "Scheduled by" in _text(c) and c.status < 300
    ]


def notices(fake: FakeBotConnector, words: str) -> list[ConnectorCall]:
    return [c for c in fake.calls if words in _text(c) and c.status < 300]


@asynccontextmanager
async def scheduling_bot(
    monkeypatch: pytest.MonkeyPatch,
    *,
    clock: ManualClock,
    fake: FakeBotConnector | None = None,
    state: State | None = None,
    agent: Callable[[UserResolver], Agent] | None = None,
    poll: float = 3600,
) -> AsyncIterator[Scheduling]:
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(FakeBotConnector())
            add_members(fake)
        monkeypatch.setenv("IDENTITY_ENDPOINT", fake.managed_identity_endpoint)
        monkeypatch.setenv("IDENTITY_HEADER", fake.identity_header)
        monkeypatch.setattr(ManagedIdentityAppCredentials, "global_token_cache", msal.TokenCache())
        settings = settings_for(fake)
        pool = ConnectorPool()
        state = state or build_state(StateSettings(ephemeral=True))
        resolver = user_resolver(settings, pool, state.cache)
        served = agent(resolver) if agent is not None else build_agent([], resolver)
        if agent is None:
            served.llm_service = ScriptedLlmService([], then="Revenue yesterday: 1,234 EUR.")
        bot = TeamsBot(
            served,
            settings,
            state=state,
            pool=pool,
            file_offers=FileOffers(state.cache, policy=FetchPolicy.local_fakes()),
            schedules=ScheduleSettings(poll=poll),
            clock=clock,
        )
        ticks: asyncio.Queue[DispatchReport] = asyncio.Queue()
        bot.schedules.dispatcher.on_tick = ticks.put_nowait
        await bot.open()
        try:
            async with TestClient(TestServer(build_web_app(bot), host="127.0.0.1")) as http:
                yield Scheduling(TeamsHarness(fake, bot, http, served), clock, ticks)
        finally:
            await bot.close(timeout=0)


async def test_a_weekday_schedule_posts_at_its_times_in_the_owners_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        reply = await bot.say("/schedule every weekday 9:00 revenue yesterday by region")
        assert "Mon 10 Mar 9:00, Tue 11 Mar 9:00, Wed 12 Mar 9:00" in reply
        assert "Europe/Paris" in reply
        for day in (1, 2):
            assert (await bot.at(FRIDAY_NOON + dt.timedelta(days=day))).total == 0
        assert (await bot.at(MONDAY_9)).enqueued == 1
        (monday,) = markers(bot.fake)
        assert "Scheduled by @Ana Lima · every weekday 9:00" in _text(monday)
        assert "/pause " in _text(monday)
        assert any("1,234 EUR" in _text(c) for c in bot.fake.calls[bot.fake.calls.index(monday) :])
        assert (await bot.at(MONDAY_9 + dt.timedelta(days=1))).enqueued == 1
        assert len(markers(bot.fake)) == 2


async def test_a_403_on_the_proactive_post_pauses_it_and_the_owner_hears_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        await bot.say("/schedule every weekday 9:00 revenue", kind="groupChat")
        bot.fake.fail("send_to_conversation", 403, code="BotNotInConversationRoster")
        await bot.at(MONDAY_9)
        assert markers(bot.fake) == []
        told = notices(bot.fake, "I was removed from the conversation")
        assert len(told) == 1 and told[0].operation == "send_to_conversation"
        assert "create_conversation" in bot.fake.operations()  # a 1:1 chat with the owner
        assert (await bot.at(MONDAY_9 + dt.timedelta(days=1))).total == 0
        assert len(notices(bot.fake, "I was removed from the conversation")) == 1


async def test_an_owner_who_left_pauses_it_and_the_conversation_hears_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        await bot.say("/schedule every weekday 9:00 revenue", kind="groupChat")
        del bot.fake.members["29:aad-ana"]  # Ana left the chat (and the tenant)
        await bot.at(MONDAY_9)
        await bot.at(MONDAY_9 + dt.timedelta(days=1))
        assert markers(bot.fake) == []
        assert len(notices(bot.fake, "is no longer in the conversation")) == 1
        (paused,) = await bot.harness.host.schedules.store.every()
        assert paused.status == "paused"


async def test_an_alert_posts_on_the_transition_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = shop(tmp_path)
    llm = ScriptedLlmService([ScriptedResponse.tool("alert_rule", RULE)], then="Orders fell.")

    def agent(resolver: UserResolver) -> Agent:
        registry = ToolRegistry()
        registry.register_local_tool(
            RunSqlTool(SqlAlchemyRunner.sqlite(path)), access_groups=["user"]
        )
        return Agent(
            llm_service=llm,
            tool_registry=registry,
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
        )

    clock = ManualClock.at(MONDAY_9 - dt.timedelta(hours=1))
    async with scheduling_bot(monkeypatch, clock=clock, agent=agent) as bot:
        draft = await bot.say("/schedule every hour when orders today drop below 100")
        assert "orders < 100 (now: 150" in draft
        (alert,) = await bot.harness.host.schedules.store.every()
        await bot.at(MONDAY_9)
        await bot.click(f"/resume {alert.id}")
        calls = len(llm.requests)
        for hour, count in enumerate([150, 87, 60, 120, 95], start=1):
            set_orders(path, count)
            await bot.at(MONDAY_9 + dt.timedelta(hours=hour))
        assert len(markers(bot.fake)) == 2
        assert len(llm.requests) - calls == 2


async def test_two_processes_on_redis_run_each_occurrence_once(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, key_prefix: str
) -> None:
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=1))
    async with contextlib.AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeBotConnector())
        add_members(fake)
        bots = []
        # A process looks at least every minute: the one where nothing was scheduled has
        # no wake of its own, so both contend for each occurrence.
        for skew in (5.0, 0.0):
            state = build_state(StateSettings(redis_url=redis_url, key_prefix=key_prefix))
            stack.push_async_callback(state.aclose)
            bots.append(
                await stack.enter_async_context(
                    scheduling_bot(
                        monkeypatch, clock=clock.skewed(skew), fake=fake, state=state, poll=60
                    )
                )
            )
        for n in range(5):
            await bots[0].say(f"/schedule every 15 minutes question {n}")
        for quarter in range(4):
            await clock.sleeping(2)
            for bot in bots:
                while not bot.ticks.empty():
                    bot.ticks.get_nowait()
            clock.set((MONDAY_9 + dt.timedelta(minutes=15 * quarter)).timestamp())
            await asyncio.gather(*(bot.ticks.get() for bot in bots))
            await asyncio.gather(*(bot.harness.host.idle() for bot in bots))
        assert len(markers(fake)) == 5 * 4


async def test_after_a_two_hour_outage_the_missed_run_happens_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state = build_state(StateSettings(data_dir=tmp_path / "state"))
    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=30))
    async with contextlib.AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeBotConnector())
        add_members(fake)
        async with scheduling_bot(monkeypatch, clock=clock, fake=fake, state=state) as bot:
            await bot.say("/schedule every hour revenue this hour")
            assert (await bot.at(MONDAY_9)).enqueued == 1
        # the bot is down from 9:00 to 11:10: the 10:00 and 11:00 runs are missed
        clock.set((MONDAY_9 + dt.timedelta(hours=2, minutes=10)).timestamp())
        async with scheduling_bot(monkeypatch, clock=clock, fake=fake, state=state) as bot:
            report = await bot.ticks.get()  # the first look after the start
            await bot.harness.host.idle()
            assert report.enqueued == 1
            assert "ran 10 min late; 1 earlier run was missed" in _text(markers(fake)[-1])
            assert len(markers(fake)) == 2
            assert (await bot.at(MONDAY_9 + dt.timedelta(hours=3))).enqueued == 1  # 12:00
            assert "late" not in _text(markers(fake)[-1])
            assert len(markers(fake)) == 3
    await state.aclose()


async def test_the_owners_quota_applies_to_scheduled_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run asks as its owner: their quota refuses it like a question (no model call)."""
    from agent_core.state.quotas import MemoryRateLimiter, RateLimitHook

    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        agent = bot.harness.agent
        agent.lifecycle_hooks.append(RateLimitHook(MemoryRateLimiter(), limit=1, window=7 * 86400))
        await bot.say("/schedule every weekday 9:00 revenue yesterday")
        await bot.at(MONDAY_9)
        calls = len(agent.llm_service.requests)  # type: ignore[attr-defined]
        sent = len(bot.fake.calls)
        await bot.at(MONDAY_9 + dt.timedelta(days=1))
        tuesday = " ".join(_text(c) for c in bot.fake.calls[sent:])
        assert "Scheduled by" in tuesday and "reached your limit of 1 messages" in tuesday
        assert len(agent.llm_service.requests) == calls  # type: ignore[attr-defined]


async def test_nobody_else_pauses_it_and_forged_clicks_change_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bo's Pause click on Ana's schedule (its id is on every marker) is refused; a click
    or a command whose token the Bot Framework did not sign is a 401 and changes nothing;
    Ana's own click pauses it."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        await bot.say("/schedule every weekday 9:00 revenue", kind="groupChat")
        (made,) = await bot.harness.host.schedules.store.every()
        sent = len(bot.fake.calls)
        await bot.click(f"/pause {made.id}", kind="groupChat", user="aad-bo", user_name="Bo")
        told = [c for c in bot.fake.calls[sent:] if "There is no schedule" in _text(c)]
        assert [c.operation for c in told] == ["send_to_conversation"]  # to Bo alone, 1:1
        assert "I answered you privately" in _text(bot.fake.calls[-1])  # the room: only that
        pause = {"threadline_action": f"/pause {made.id}"}
        value = {"action": {"verb": "threadline.action", "data": pause}}
        for forged in (
            bot.harness.message(f"/unschedule {made.id}", kind="groupChat"),
            bot.harness.invoke("adaptiveCard/action", value, kind="groupChat"),
        ):
            response = await bot.harness.post(forged, auth="Bearer not.a.token")
            assert response.status == 401
        kept = await bot.harness.host.schedules.store.get(made.id)
        assert kept is not None and kept.status == "active"
        await bot.click(f"/pause {made.id}", kind="groupChat")
        kept = await bot.harness.host.schedules.store.get(made.id)
        assert kept is not None and kept.status == "paused"


async def test_schedule_run_typed_in_chat_runs_it_once_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/schedule run <id>`` typed in Teams (the Slack twin's test): Bo's runs nothing,
    Ana's runs it now, and Monday's run still happens."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        await bot.say("/schedule every weekday 9:00 revenue yesterday", kind="groupChat")
        (made,) = await bot.harness.host.schedules.store.every()
        await bot.say(f"/schedule run {made.id}", kind="groupChat", user="aad-bo", user_name="Bo")
        assert markers(bot.fake) == []
        said = await bot.say(f"/schedule run {made.id}", kind="groupChat")
        assert "Running now" in " ".join(_text(c) for c in bot.fake.calls)
        assert len(markers(bot.fake)) == 1, said
        assert (await bot.at(MONDAY_9)).enqueued == 1
        assert len(markers(bot.fake)) == 2
        seen = len(bot.fake.calls)
        await bot.say(f"/schedule run {made.id}", kind="groupChat", user=ADMIN, user_name="Al")
        said = " ".join(_text(c) for c in bot.fake.calls[seen:])
        assert "Running now" in said and "It runs as @Ana Lima, with their access" in said
        assert len(markers(bot.fake)) == 3


async def test_forget_removes_their_schedules_and_the_conversation_hears_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Slack twin's: the line goes through the stored conversation reference (its
    person blanked), once."""
    from agent_core.forget import forget_person

    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(monkeypatch, clock=clock) as bot:
        await bot.say("/schedule every weekday 9:00 revenue", kind="groupChat")
        (made,) = await bot.harness.host.schedules.store.every()
        state = bot.harness.host.state
        for _ in range(2):
            await forget_person(state, [made.owner], given="ana")
            await bot.harness.host.idle()
        assert await state.schedules.every() == []
        told = notices(bot.fake, "was removed")
        assert len(told) == 1 and told[0].operation == "send_to_conversation"
        assert made.id in _text(told[0]) and "Ana" not in _text(told[0])
        assert (await bot.at(MONDAY_9)).enqueued == 0
