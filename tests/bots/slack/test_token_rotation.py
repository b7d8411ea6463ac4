"""Token rotation in one Slack bot process on SQLite (issue 38), on an injected clock that
the fake Slack shares: questions, a scheduled run and a click across a token's expiry are
all served with one renewal; a refused refresh token stops that installation once, and
``threadline doctor`` says so; ``tokens_revoked`` removes the tokens."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.installations import KeyValueInstallationStore
from adapters.slack.testing import FakeSlackApi, Reply, RotatingTokens
from agent_core import Agent, UserResolver
from agent_core.schedules.dispatcher import DispatchReport
from agent_core.schedules.settings import ScheduleSettings
from agent_core.schedules.testing import ManualClock
from agent_core.state import MemoryKeyValueStore
from agent_core.state_factory import State, StateSettings, build_state
from bots.slack import doctor
from bots.slack.app import build_web_app
from bots.slack.bot import SlackBot
from bots.slack.clients import build_user_resolver, default_clients
from bots.slack.settings import SlackSettings
from tests.bots.approval_kit import Refund, approval_agent, refund_script
from tests.bots.slack.agents import build_agent
from tests.bots.slack.harness import SECRET, SlackHarness, add_users
from tests.bots.slack.test_approvals import ask, click, thread_text
from tests.bots.slack.test_bot_entry_points import mention
from tests.bots.slack.test_schedules import MONDAY_9, Scheduling, markers

HOURS = 3600
START = MONDAY_9 - dt.timedelta(hours=3)


def installation(team: str, tokens: RotatingTokens, clock: ManualClock) -> Installation:
    return Installation(
        app_id="A1",
        team_id=team,
        bot_token=tokens.access_token,
        bot_refresh_token=tokens.refresh_token,
        bot_token_expires_at=int(clock.now()) + tokens.expires_in,
        bot_id="B1",
        bot_user_id="UBOT",
        bot_scopes=["chat:write"],
        user_id="U1",
    )


@asynccontextmanager
async def rotating_bot(
    tmp_path: Path,
    clock: ManualClock,
    *,
    lifetime: int = 3 * HOURS,
    agent_factory: Callable[[UserResolver, State], Agent] | None = None,
) -> AsyncIterator[tuple[Scheduling, KeyValueInstallationStore, RotatingTokens, State]]:
    """An OAuth app on SQLite, installed in T1 with a token that expires ``lifetime`` after
    ``clock``'s now; it renews tokens 2 hours ahead (the default). ``agent_factory``: the
    agent (default: a scripted one answering "Revenue: 1,234 EUR.")."""
    async with contextlib.AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeSlackApi(clock=clock.now))
        add_users(fake)
        fake.users["U1"]["tz"] = "Europe/Paris"
        settings = SlackSettings(
            client_id=fake.client_id,
            client_secret=fake.client_secret,
            signing_secret=SECRET,
            api_url=fake.base_url,
            stream_interval=0,
            stop_button_after=60,
            admin_users=["UADMIN"],
        )
        state = build_state(StateSettings(data_dir=tmp_path / "state"))
        stack.push_async_callback(state.aclose)
        clients = default_clients(settings, state, clock=clock)
        store = clients.installation_store
        assert store is not None
        tokens = fake.issue_tokens("T1", lifetime=lifetime)
        await store.async_save(installation("T1", tokens, clock))
        resolver = build_user_resolver(settings, clients, state.cache)
        agent = (
            agent_factory(resolver, state)
            if agent_factory is not None
            else build_agent([], resolver, then="Revenue: 1,234 EUR.", memory=state.memory)
        )
        bot = SlackBot(
            agent,
            settings,
            state=state,
            clients=clients,
            schedules=ScheduleSettings(poll=3600),
            clock=clock,
        )
        ticks: asyncio.Queue[DispatchReport] = asyncio.Queue()
        bot.schedules.dispatcher.on_tick = ticks.put_nowait
        await bot.open()
        try:
            async with TestClient(TestServer(build_web_app(bot))) as http:
                yield Scheduling(SlackHarness(fake, bot, http), clock, ticks), store, tokens, state
        finally:
            await bot.close(timeout=0)


def expired_calls(fake: FakeSlackApi) -> list[str]:
    return [c.method for c in fake.calls if (c.response or {}).get("error") == "token_expired"]


def answered(fake: FakeSlackApi, ts: str) -> bool:
    return any("1,234 EUR" in m.text for m in fake.thread("C1", ts))


async def test_questions_and_a_scheduled_run_across_an_expiry_renew_once(tmp_path: Path) -> None:
    clock = ManualClock.at(START)
    async with rotating_bot(tmp_path, clock) as (bot, _, first, _state):
        h, fake = bot.harness, bot.fake
        fake.token_lifetime = 12 * HOURS
        await bot.schedule("every day 9:00 revenue yesterday")
        for n in range(5):  # 3 hours left: more than the margin, nothing renewed
            await h.event(mention(ts=f"{100 + n}.0"))
        await h.idle()
        assert fake.refreshes() == []

        # 9:00: the first token has just expired and the schedule is due
        assert (await bot.at(MONDAY_9)).enqueued == 1
        [marker] = markers(fake)
        [renewal] = fake.refreshes()
        assert renewal.args["refresh_token"] == first.refresh_token
        new = renewal.response and renewal.response["access_token"]
        posted = [c for c in fake.calls_to("chat.postMessage") if c.message is marker]
        assert [c.token for c in posted] == [new]

        await asyncio.gather(*(h.event(mention(ts=f"{200 + n}.0")) for n in range(20)))
        await h.idle()
        assert all(answered(fake, f"{ts}.0") for ts in [*range(100, 105), *range(200, 220)])
        assert len(fake.refreshes()) == 1
        assert expired_calls(fake) == []
        late = [c for c in fake.calls if c.at >= renewal.at and c.method != "oauth.v2.access"]
        assert {c.token for c in late} == {new}


async def test_an_approval_clicked_after_expiry_resumes_with_the_renewed_token(
    tmp_path: Path,
) -> None:
    """Asked with the first token; clicked once it expired: the click renews it (once),
    and the approval's update and the resumed answer carry the new token."""
    clock = ManualClock.at(START)
    refund = Refund()

    def factory(resolver: UserResolver, state: State) -> Agent:
        return approval_agent(refund_script(), resolver, state, refund=refund)

    async with rotating_bot(tmp_path, clock, agent_factory=factory) as (bot, _, first, _s):
        h, fake = bot.harness, bot.fake
        fake.token_lifetime = 12 * HOURS
        message = await ask(h)
        assert fake.refreshes() == [] and refund.runs == []
        clock.advance(3 * HOURS)  # the first token has expired
        await click(h, "approve", message)
        assert refund.runs == [42]
        assert "Refunded." in thread_text(h, message)
        [renewal] = fake.refreshes()
        assert renewal.response is not None and renewal.args["refresh_token"] == first.refresh_token
        after = [c for c in fake.calls if c.at >= renewal.at and c.method.startswith("chat.")]
        assert after and {c.token for c in after} == {renewal.response["access_token"]}
        assert expired_calls(fake) == []


async def test_a_refused_refresh_token_stops_the_installation_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock.at(START)
    async with rotating_bot(tmp_path, clock, lifetime=HOURS) as (bot, store, first, state):
        h, fake = bot.harness, bot.fake
        second = fake.issue_tokens("T2", lifetime=12 * HOURS)
        await store.async_save(installation("T2", second, clock))
        fake.users["U2"] = {**fake.users["U1"], "id": "U2", "team_id": "T2"}  # T2's own person
        fake.revoke(first.refresh_token)
        with caplog.at_level(logging.INFO):
            for n in range(4):
                await h.event(mention(ts=f"{100 + n}.0"), team="T1")
                await h.event(mention(ts=f"{300 + n}.0", user="U2"), team="T2")
                await h.command("revenue")  # bolt's own path (T1): refused the same way
            await h.idle()
        assert [c.response and c.response["error"] for c in fake.calls_to("oauth.v2.access")] == [
            "invalid_refresh_token"
        ]
        assert not any(answered(fake, f"{100 + n}.0") for n in range(4))
        assert all(answered(fake, f"{300 + n}.0") for n in range(4))
        stopped = [r for r in caplog.records if "stopped" in r.getMessage()]
        assert [r.levelname for r in stopped] == ["ERROR"]
        assert first.refresh_token not in caplog.text and fake.client_secret not in caplog.text
        assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None

        check = await doctor.installations(store)
        assert check.status == "fail" and "T1 since" in check.detail
        assert "invalid_refresh_token" in check.detail and "reinstall" in check.detail
        settings = h.bot.settings
        assert (await doctor.checks(settings, state.records))[-1] == check

        again = fake.issue_tokens("T1", lifetime=12 * HOURS)  # an admin reinstalls
        await store.async_save(installation("T1", again, clock))
        assert (await doctor.installations(store)).status == "ok"
        await h.event(mention(ts="400.0"), team="T1")
        await h.idle()
        assert answered(fake, "400.0")


async def test_tokens_revoked_removes_the_installations_tokens(tmp_path: Path) -> None:
    clock = ManualClock.at(START)
    async with rotating_bot(tmp_path, clock) as (bot, store, _, _state):
        h = bot.harness
        await h.event({"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBOT"]}})
        assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
        await h.event(mention(ts="500.0"))
        await h.idle()
        assert not answered(bot.fake, "500.0")


async def test_an_org_wide_install_serves_every_workspace_and_one_person_of_the_org(
    tmp_path: Path,
) -> None:
    """Enterprise Grid: installed once for organisation E1; T1, T2 and T9 (added to the
    organisation after the install) are served by it, and Ana asking from T1 and from T2 is
    one person (``slack:E1:U1``): her roles, budgets, memory and schedules are one."""
    clock = ManualClock.at(START)
    async with rotating_bot(tmp_path, clock) as (bot, store, _first, _state):
        h, fake = bot.harness, bot.fake
        for team in ("T1", "T2"):
            fake.add_workspace("E1", team)
        for person in fake.users.values():  # people of the organisation (issue 35: members)
            person["enterprise_user"] = {"enterprise_id": "E1", "enterprise_name": "Acme Corp"}
        org = fake.issue_tokens("E1", lifetime=12 * HOURS)
        await store.async_save(
            Installation(
                app_id="A1",
                enterprise_id="E1",
                enterprise_name="Acme Corp",
                is_enterprise_install=True,
                bot_token=org.access_token,
                bot_refresh_token=org.refresh_token,
                bot_token_expires_at=int(clock.now()) + org.expires_in,
                bot_id="B1",
                bot_user_id="UBOT",
                user_id="U1",
            )
        )
        await store.async_delete_bot(enterprise_id=None, team_id="T1")  # only the org's now
        fake.add_workspace("E1", "T9")  # added to the organisation after the install
        for n, team in enumerate(("T1", "T2", "T9")):
            await h.event(mention(ts=f"{600 + n}.0"), team=team, enterprise="E1")
        await h.idle()
        assert all(answered(fake, f"{600 + n}.0") for n in range(3))
        assert {c.token for c in fake.calls_to("chat.postMessage")} == {org.access_token}
        llm = h.agent.llm_service
        asked_as = {r.user.id for r in llm.requests}  # type: ignore[attr-defined]
        assert asked_as == {"slack:E1:U1"}

        said = str(await doctor.installed(store))
        assert "org E1 Acme Corp (org-wide, rotating tokens; workspaces served: T1, T2, T9)" in said
        status = {**mention("610.0", user="UADMIN"), "text": "<@UBOT> /status"}
        await h.event(status, team="T2", enterprise="E1")  # an admin's /status says so too
        await h.idle()
        shown = json.dumps([c.args for c in fake.calls_to("chat.postMessage")], default=str)
        assert "served here: org E1: workspaces T1, T2, T9" in shown


async def test_socket_mode_events_after_expiry_are_answered_with_the_renewed_token(
    tmp_path: Path,
) -> None:
    """Socket Mode: the connection itself uses the app-level token (xapp-, which does not
    expire); each delivery is authorized like an HTTP one, so the bot token is renewed once."""
    from bots.slack.app import socket_mode_handler

    clock = ManualClock.at(START)
    async with FakeSlackApi(clock=clock.now) as fake:
        add_users(fake)
        fake.token_lifetime = 12 * HOURS
        settings = SlackSettings(
            client_id=fake.client_id,
            client_secret=fake.client_secret,
            app_token="xapp-1",
            mode="socket",
            api_url=fake.base_url,
            stream_interval=0,
        )
        state = build_state(StateSettings(data_dir=tmp_path / "state"))
        clients = default_clients(settings, state, clock=clock)
        store = clients.installation_store
        assert store is not None
        first = fake.issue_tokens("T1", lifetime=HOURS)  # inside the 2-hour margin
        await store.async_save(installation("T1", first, clock))
        resolver = build_user_resolver(settings, clients, state.cache)
        agent = build_agent([], resolver, then="Revenue: 1,234 EUR.", memory=state.memory)
        bot = SlackBot(agent, settings, state=state, clients=clients, clock=clock)
        await bot.open()
        handler = socket_mode_handler(bot)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        try:
            await fake.wait_for(lambda f: bool(f._sockets))
            clock.advance(2 * HOURS)  # the first token has expired
            for n in range(3):
                event = {
                    "team_id": "T1",
                    "api_app_id": "A1",
                    "type": "event_callback",
                    "event_id": f"EvS{n}",
                    "event_time": int(clock.now()),
                    "event": {
                        "type": "app_mention",
                        "user": "U1",
                        "text": "<@UBOT> revenue?",
                        "ts": f"{700 + n}.0",
                        "channel": "C1",
                    },
                }
                await fake.send_envelope("events_api", event, envelope_id=f"env-{n}")
            await fake.wait_for_call("socket_ack", 3)
            await bot.idle()
            assert all(answered(fake, f"{700 + n}.0") for n in range(3))
            [renewal] = fake.refreshes()
            assert renewal.response is not None
            posts = fake.calls_to("chat.postMessage")
            assert posts and {c.token for c in posts} == {renewal.response["access_token"]}
            assert expired_calls(fake) == []
            assert {c.token for c in fake.calls_to("apps.connections.open")} == {"xapp-1"}
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]
            await handler.client.aiohttp_client_session.close()
            await bot.close(timeout=0)
            await state.aclose()


async def test_a_renewal_that_outlived_its_lock_does_not_stop_the_installation() -> None:
    """Regression: process A took the renewal lock, but its ``oauth.v2.access`` was slow and
    the lock expired; B took it and renewed first, spending the refresh token A had sent.
    Slack refused A's, and A stopped the installation, removing the tokens B had just saved
    (seen in the e2e test under load). Two ``BotTokens`` on one state stand for the two
    processes; the lock's clock is moved past its lease."""
    from adapters.slack.tokens import BotTokens

    clock = ManualClock.at(START)
    lease_now = [0.0]
    records, locks = MemoryKeyValueStore(), MemoryKeyValueStore(clock=lambda: lease_now[0])
    async with FakeSlackApi(clock=clock.now) as fake:
        store = KeyValueInstallationStore(records)
        first = fake.issue_tokens("T1", lifetime=30)  # due, and past the grace
        await store.async_save(installation("T1", first, clock))
        a, b = (
            BotTokens(
                KeyValueInstallationStore(records),
                locks,
                AsyncWebClient(base_url=fake.base_url),
                client_id=fake.client_id,
                client_secret=fake.client_secret,
                clock=clock,
            )
            for _ in range(2)
        )
        fake.script("oauth.v2.access", Reply(delay=0.5))  # A's exchange is slow
        slow = asyncio.create_task(a.bot(enterprise_id=None, team_id="T1"))
        await fake.wait_for_call("oauth.v2.access")
        lease_now[0] = 31.0  # A's lock has expired
        renewed = await b.bot(enterprise_id=None, team_id="T1")
        assert renewed is not None and renewed.bot_token != first.access_token
        found = await slow
        refused, traded = fake.calls_to("oauth.v2.access")  # in the order they came
        assert refused.response is not None and traded.response is not None
        assert (refused.response.get("error"), traded.response["ok"]) == (
            "invalid_refresh_token",
            True,
        )
        assert found is not None and found.bot_token == renewed.bot_token
        assert await store.stopped() == {}
        kept = await store.async_find_bot(enterprise_id=None, team_id="T1")
        assert kept is not None and kept.bot_token == renewed.bot_token
