"""Attacks on schedules through the real Slack bot: forged requests, other people's
schedules, one person's flood, and a restart in the middle of a run on two processes."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import urllib.parse
from pathlib import Path
from typing import Any

from adapters.slack.elements import ACTION_BUTTON
from adapters.slack.testing import FakeSlackApi
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.extensions.hooks import LifecycleHook
from agent_core.llm.base import LlmRequest
from agent_core.llm.scripted import ScriptedResponse
from agent_core.schedules.testing import ManualClock
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import User
from tests.bots.slack.harness import add_users, sign
from tests.bots.slack.test_schedules import (
    FRIDAY_NOON,
    MONDAY_9,
    Scheduling,
    markers,
    private_text,
    scheduling_bot,
)


def command_body(text: str, *, user: str = "U1", command: str = "/schedule") -> bytes:
    form = {
        "team_id": "T1",
        "channel_id": "C1",
        "user_id": user,
        "command": command,
        "text": text,
        "api_app_id": "A1",
        "response_url": "https://hooks.slack.invalid/cmd",
        "trigger_id": "trig",
    }
    return urllib.parse.urlencode(form).encode()


def click_body(command: str, *, user: str) -> bytes:
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user, "team_id": "T1"},
        "api_app_id": "A1",
        "container": {"type": "message", "message_ts": "1.0", "channel_id": "C1"},
        "channel": {"id": "C1"},
        "message": {"ts": "1.0"},
        "actions": [{"action_id": f"{ACTION_BUTTON}:0", "block_id": "b", "value": command}],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


FORM = "application/x-www-form-urlencoded"


async def test_forged_commands_and_clicks_change_nothing(tmp_path: Path) -> None:
    """A /schedule, an admin's pause-all and a Pause click signed with another secret, or
    replayed from an hour ago, are refused before anything is read: nothing saved, paused
    or posted."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue")
        (made,) = await bot.harness.bot.schedules.store.every()
        before = len(bot.fake.calls)
        forged = [
            command_body("every day 9:00 everyone's salaries", user="UADMIN"),
            command_body("pause-all", user="UADMIN"),
            click_body(f"/pause {made.id}", user="U1"),
            click_body(f"/unschedule {made.id}", user="UADMIN"),
        ]
        for body in forged:
            response = await bot.harness.post(body, sign(body, secret="not-the-secret"), FORM)
            assert response.status == 401
            old = int(clock.now()) - 3600  # a genuine signature, replayed an hour later
            replayed = await bot.harness.post(body, sign(body, timestamp=old), FORM)
            assert replayed.status == 401
        await bot.harness.idle()
        assert await bot.harness.bot.schedules.store.every() == [made]
        assert (await bot.harness.bot.schedules.store.get(made.id)).status == "active"  # type: ignore[union-attr]
        assert len(bot.fake.calls) == before


async def test_nobody_else_pauses_or_removes_a_schedule_by_its_id(tmp_path: Path) -> None:
    """Bo knows Ana's schedule id (it is on every marker): his /pause, /unschedule and
    /resume of it are answered as if it did not exist; an admin of the workspace may."""
    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock) as bot:
        await bot.schedule("every weekday 9:00 revenue")
        (made,) = await bot.harness.bot.schedules.store.every()
        for verb in ("pause", "unschedule", "resume"):
            said = await bot.schedule(f"{verb} {made.id}", user="U2")
            assert "no schedule" in said.lower()
            kept = await bot.harness.bot.schedules.store.get(made.id)
            assert kept is not None and kept.status == "active"
        listed = await bot.schedule("list", user="U2")
        assert made.id not in listed
        await bot.schedule(f"pause {made.id}", user="UADMIN")
        kept = await bot.harness.bot.schedules.store.get(made.id)
        assert kept is not None and kept.status == "paused"


class InFlight(LifecycleHook):
    """How many answers run at once, at most."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def before_message(self, user: User, message: str) -> str | None:
        self.now += 1
        self.most = max(self.most, self.now)
        return None

    async def after_message(self, result: Any) -> None:
        self.now -= 1


async def test_one_persons_flood_is_bounded(tmp_path: Path) -> None:
    """Ana sends 30 /schedule commands at once from six channels, all due at the same
    minute: 25 are kept (her cap), the others refused plainly; at 9:00 each runs once, and
    never more than 3 of hers at a time (the per-person turn cap), in whatever channel."""
    llm = ScriptedLlmService([], then=ScriptedResponse(text="Revenue.", latency=0.05))
    hook = InFlight()

    def build(resolver: UserResolver, state: State) -> Agent:
        return Agent(
            llm_service=llm,
            tool_registry=ToolRegistry(),
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
            conversation_store=state.conversations,
            lifecycle_hooks=[hook],
        )

    clock = ManualClock.at(FRIDAY_NOON)
    async with scheduling_bot(tmp_path, clock=clock, agent=build) as bot:
        channels = [f"C{n % 6 + 1}" for n in range(30)]
        await asyncio.gather(
            *(
                bot.harness.command(f"every weekday 9:00 q{n}", channel=c, command="/schedule")
                for n, c in enumerate(channels)
            )
        )
        await bot.harness.idle()
        kept = await bot.harness.bot.schedules.store.every()
        assert len(kept) == 25
        refusals = [t for t in private_text(bot.fake) if "You already have 25 schedules" in t]
        assert len(refusals) == 5
        await bot.at(MONDAY_9)
        posted = sum(len(markers(bot.fake, f"C{n}")) for n in range(1, 7))
        assert posted == 25 and len(llm.requests) == 25
        assert 1 < hook.most <= 3


async def test_a_restart_in_the_middle_of_a_run_on_two_processes_posts_once(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    """Two processes on Redis; the one answering a scheduled run is restarted (drained
    with its answer still running): the other takes the run over and it posts once, under
    the one marker, as its owner's question asked once more."""
    started = asyncio.Event()

    def slow(request: LlmRequest) -> ScriptedResponse:
        started.set()
        return ScriptedResponse(text="a stale answer", latency=600)

    llm = ScriptedLlmService([slow], then="Revenue yesterday: 1,234 EUR.")

    def build(resolver: UserResolver, state: State) -> Agent:
        return Agent(
            llm_service=llm,
            tool_registry=ToolRegistry(),
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
            conversation_store=state.conversations,
        )

    clock = ManualClock.at(MONDAY_9 - dt.timedelta(minutes=1))
    async with contextlib.AsyncExitStack() as shared:
        fake = await shared.enter_async_context(FakeSlackApi())
        add_users(fake)
        fake.users["U1"]["tz"] = "Europe/Paris"
        processes: list[tuple[contextlib.AsyncExitStack, Scheduling]] = []
        for _ in range(2):
            stack = await shared.enter_async_context(contextlib.AsyncExitStack())
            settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix, claim_after=1.0)
            state = build_state(settings)
            stack.push_async_callback(state.aclose)
            bot = await stack.enter_async_context(
                scheduling_bot(tmp_path, clock=clock, state=state, fake=fake, agent=build, poll=60)
            )
            processes.append((stack, bot))
        await processes[0][1].schedule("every weekday 9:00 revenue yesterday")
        (made,) = await processes[0][1].harness.bot.schedules.store.every()
        await clock.sleeping(2)
        for _, bot in processes:
            while not bot.ticks.empty():
                bot.ticks.get_nowait()
        clock.set(MONDAY_9.timestamp())
        await started.wait()
        (victim,) = [p for p in processes if p[1].harness.bot.turns.running]
        (survivor,) = [p for p in processes if p is not victim]
        await victim[0].aclose()  # SIGTERM: drained at once, the run stays queued
        await survivor[1].harness.idle()

        (marker,) = markers(fake)
        answers = [m for m in fake.messages if "1,234 EUR" in (m.text or "")]
        assert len(answers) == 1 and answers[0].thread_ts == marker.ts
        assert not any("stale" in (m.text or "") for m in fake.visible("C1"))
        assert len(llm.requests) == 2
        kept = await survivor[1].harness.bot.schedules.store.get(made.id)
        assert kept is not None and kept.last_run is not None
        assert kept.last_run.outcome == "posted"
