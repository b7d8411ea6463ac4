"""The Slack bot on durable state, in one process: restarts lose nothing, an unavailable
Redis is acked and explained, quotas and process counts are configured from the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.slack.testing import FakeSlackApi
from agent_core import Agent, ScriptedLlmService, ScriptedResponse, ToolRegistry, UserResolver
from agent_core.llm.base import LlmRequest
from agent_core.state.testing import RedisServer, free_port
from agent_core.state_factory import State, StateSettings, build_state
from bots.slack.app import serve
from bots.slack.settings import SlackSettings
from tests.bots.slack.harness import SECRET, TOKEN, add_users, running_bot, sign
from tests.bots.slack.test_bot_entry_points import mention

SLOW = ScriptedResponse(
    text="A long answer, " * 20,
    chunks=["A long answer, "] * 20,
    chunk_delay=0.05,
)


async def test_a_turn_cut_short_by_a_restart_is_answered_once_after_it(tmp_path: Path) -> None:
    """SQLite (the default): the process stops mid-answer; the next start deletes the
    partial answer and answers again. The thread ends with one complete answer."""
    async with FakeSlackApi() as fake:
        state = build_state(StateSettings(data_dir=tmp_path))
        async with running_bot(tmp_path, [SLOW], state=state, fake=fake, stream_interval=0.01) as h:
            await h.event(mention("<@UBOT> tell me everything"))
            await fake.wait_for(lambda f: bool(f.calls_to("chat.appendStream")))
        await state.aclose()
        [partial] = fake.visible("C1")  # settled as stopped, left by the stopped process
        assert partial.text.endswith("_(Stopped.)_") and not partial.streaming

        state = build_state(StateSettings(data_dir=tmp_path))
        try:
            async with running_bot(tmp_path, ["The whole answer."], state=state, fake=fake) as h:
                await h.idle()
                [answer] = fake.visible("C1")
                assert answer.text == "The whole answer." and answer.thread_ts == "100.000100"
                assert partial.deleted and h.llm_questions() == ["tell me everything"]
        finally:
            await state.aclose()


async def test_a_turn_that_never_finishes_is_given_up_with_a_plain_message(
    tmp_path: Path,
) -> None:
    """Three runs cut short (a turn that takes its process down every time must not loop
    forever): the fourth start tells the asker, once, and the thread holds only that."""
    async with FakeSlackApi() as fake:
        for run in range(4):
            state = build_state(StateSettings(data_dir=tmp_path))
            try:
                async with running_bot(
                    tmp_path, [SLOW], state=state, fake=fake, stream_interval=0.01
                ) as h:
                    if run == 0:
                        await h.event(mention("<@UBOT> doomed"))
                    if run < 3:
                        await fake.wait_for(
                            lambda f, n=run + 1: len(f.calls_to("chat.appendStream")) >= n
                        )
                    else:
                        await h.idle()
            finally:
                await state.aclose()
        [notice] = fake.visible("C1")
        assert "interrupted" in notice.text and notice.thread_ts == "100.000100"
        assert len(fake.calls_to("chat.startStream")) == 3


async def test_a_restart_keeps_threads_and_conversations(tmp_path: Path) -> None:
    state = build_state(StateSettings(data_dir=tmp_path))
    async with running_bot(tmp_path, ["First answer"], state=state) as h:
        await h.event(mention("<@UBOT> first question"))
        await h.idle()
    await state.aclose()
    state = build_state(StateSettings(data_dir=tmp_path))
    try:
        async with running_bot(tmp_path, ["Second answer"], state=state) as h:
            follow = {
                "type": "message",
                "channel_type": "channel",
                "channel": "C1",
                "user": "U1",
                "text": "and then?",
                "ts": "101.000100",
                "thread_ts": "100.000100",
            }
            await h.event(follow)
            await h.idle()
            [request] = h.agent.llm_service.requests  # type: ignore[attr-defined]
            assert [m.content for m in request.messages] == [
                "first question",
                "First answer",
                "and then?",
            ]
    finally:
        await state.aclose()


@pytest.fixture
async def redis_state(private_redis: RedisServer) -> AsyncIterator[State]:
    state = build_state(StateSettings(redis_url=private_redis.url, claim_after=1.0))
    yield state
    private_redis.start()
    await state.aclose()


async def test_while_redis_is_down_every_delivery_is_acked_and_explained(
    tmp_path: Path, redis_state: State, private_redis: RedisServer
) -> None:
    async with running_bot(tmp_path, ["Back again"], state=redis_state) as h:
        private_redis.stop()
        assert (await h.event(mention())).status == 200
        await h.fake.wait_for(lambda f: bool(f.visible("C1")))
        [notice] = h.fake.visible("C1")
        assert "temporarily unavailable" in notice.text and notice.thread_ts == "100.000100"

        for text in ("private what?", "what?"):
            response = await h.command(text)
            assert response.status == 200
            assert "temporarily unavailable" in json.loads(await response.text())["text"]
        assert (await h.action("threadline_button:0", "Top?", thread_ts="129.0")).status == 200
        await h.fake.wait_for(lambda f: len(f.visible("C1")) == 2)
        health = await h.http.get("/healthz")
        assert health.status == 503
        assert "Redis is unavailable" in (await health.json())["state"]["detail"]

        private_redis.start()
        assert (await h.http.get("/healthz")).status == 200
        assert (await h.event(mention(ts="110.000100"))).status == 200
        await h.idle()
        assert h.fake.thread("C1", "110.000100")[0].text == "Back again"


async def test_only_the_asker_can_stop_and_a_second_click_changes_nothing(
    tmp_path: Path, redis_state: State
) -> None:
    """Stop goes through Redis pub/sub (any process may run the turn)."""
    async with running_bot(
        tmp_path, ["never"], latency=60, stop_button_after=0, state=redis_state
    ) as h:
        await h.event(mention("<@UBOT> slow"))
        await h.fake.wait_for(
            lambda f: any(b.get("type") == "actions" for m in f.visible("C1") for b in m.blocks)
        )
        stop = h.fake.visible("C1")[0]
        value = stop.blocks[-1]["elements"][0]["value"]
        await h.action(
            "threadline_stop", value, user="U2", message_ts=stop.ts, thread_ts="100.000100"
        )
        assert h.bot.turns.running == 1
        await asyncio.gather(
            *(
                h.action("threadline_stop", value, message_ts=stop.ts, thread_ts="100.000100")
                for _ in "ab"
            )
        )
        await h.idle()
        assert h.fake.visible("C1") == []
        metrics = await (await h.http.get("/metrics")).text()
        assert 'threadline_slack_turns_total{outcome="stopped"} 1.0' in metrics


# --- the CLI's wiring: serve() -----------------------------------------------------------------


def echo(request: LlmRequest) -> str:
    return f"echo: {request.messages[-1].content} ({len(request.messages) - 1} before)"


def scripted_agent(state: State, resolver: UserResolver) -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(then=echo),
        tool_registry=ToolRegistry(),
        user_resolver=resolver,
        agent_memory=state.memory,
        conversation_store=state.conversations,
    )


class Listening(logging.Handler):
    """Sets ``ready`` when the server logs that it listens (an event, not a poll)."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "listening on" in record.getMessage():
            self.ready.set()


@contextlib.contextmanager
def listening() -> Iterator[Listening]:
    handler = Listening()
    logger = logging.getLogger("bots.slack.app")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.level = level


@asynccontextmanager
async def served(settings: SlackSettings, state: StateSettings) -> AsyncIterator[None]:
    with listening() as handler:
        task = asyncio.create_task(serve(settings, state, scripted_agent))
        try:
            await asyncio.wait_for(handler.ready.wait(), 10)
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def post_event(
    session: aiohttp.ClientSession, port: int, event: dict[str, Any], n: int
) -> int:
    body = json.dumps(
        {"team_id": "T1", "type": "event_callback", "event_id": f"Ev{n}", "event": event}
    )
    headers = {**sign(body.encode()), "Content-Type": "application/json"}
    async with session.post(
        f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers
    ) as r:
        return r.status


async def test_serve_applies_the_quota_and_keeps_state_across_restarts(tmp_path: Path) -> None:
    async with FakeSlackApi() as fake, aiohttp.ClientSession() as session:
        add_users(fake)
        settings = SlackSettings(
            bot_token=TOKEN,
            signing_secret=SECRET,
            api_url=fake.base_url,
            host="127.0.0.1",
            port=free_port(),
            data_dir=tmp_path,
            stream_interval=0,
            rate_limit="2/3600",
        )
        state = StateSettings(data_dir=tmp_path)
        async with served(settings, state):
            assert await post_event(session, settings.port, mention("<@UBOT> one"), 1) == 200
            await fake.wait_for(lambda f: bool(f.thread("C1", "100.000100")))
        async with served(settings, state):  # restarted: same files
            follow = {
                "type": "message",
                "channel_type": "channel",
                "channel": "C1",
                "user": "U1",
                "text": "two",
                "ts": "101.000100",
                "thread_ts": "100.000100",
            }
            assert await post_event(session, settings.port, follow, 2) == 200
            await fake.wait_for(lambda f: len(f.thread("C1", "100.000100")) == 2)
            three = mention("<@UBOT> three", ts="102.000100")
            assert await post_event(session, settings.port, three, 3) == 200
            await fake.wait_for(lambda f: bool(f.thread("C1", "102.000100")))
        first, second = (m.text for m in fake.thread("C1", "100.000100"))
        assert (first, second) == ("echo: one (0 before)", "echo: two (2 before)")
        [refusal] = fake.thread("C1", "102.000100")
        assert "limit of 2 messages per hour" in refusal.text


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--processes", "2"], {}, "needs shared state: set REDIS_URL"),
        (["--processes", "2", "--ephemeral"], {"REDIS_URL": "redis://127.0.0.1:1/0"}, "REDIS_URL"),
        (
            ["--processes", "11", "--mode", "socket"],
            {"REDIS_URL": "redis://127.0.0.1:1/0", "SLACK_APP_TOKEN": "xapp-1"},
            "at most 10 Socket Mode connections",
        ),
        (["--processes", "0"], {}, "at least 1"),
    ],
)
def test_process_counts_that_cannot_work_are_refused(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    from bots.cli import main

    for name in ("REDIS_URL", "SLACK_APP_TOKEN", "SLACK_CLIENT_ID", "THREADLINE_EPHEMERAL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["slack", "--scripted", *argv]) == 2
    assert message in capsys.readouterr().err


async def test_a_refusal_is_logged_once_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression (issue 23): a quota reached (the bot doing its job) was logged at ERROR
    with a traceback, which pages someone for nothing; an unexpected error still is."""
    async with running_bot(tmp_path, ["One.", RuntimeError("model exploded")]) as h:
        quota = h.bot.state.rate_limit_hook(limit=1, window=3600)
        for served in h.agent.served_agents():
            served.lifecycle_hooks.append(quota)
        caplog.set_level(logging.INFO)
        await h.event(mention("<@UBOT> one", ts="100.000100"))
        await h.event(mention("<@UBOT> two", ts="101.000100"))
        await h.idle()
        refusals = [r for r in caplog.records if "refused: You have reached" in r.getMessage()]
        assert [(r.levelno, r.exc_info) for r in refusals] == [(logging.INFO, None)]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        caplog.clear()
        await h.event(mention("<@UBOT> three", ts="102.000100", user="UADMIN"))
        await h.idle()
        [failed] = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert failed.exc_info is not None and "model exploded" in str(failed.exc_info[1])
