"""The README's own agent (``examples/weather.py``, a tool of its own) served by the four
commands as real processes with ``--app``: Slack (signed payload in, reply on the fake Web
API), Teams (signed activity in, reply on the fake connector), the console and the terminal
chat. In Slack and Teams the answer comes with the workspace's identity and durable state
from the channel's ``Runtime``: the conversation is in the SQLite state, under the user id
the channel's resolver gave (``slack:T1:U1``, ``teams:{tenant}:{aad id}``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.testing import FakeSlackApi
from adapters.teams.testing import FakeBotConnector
from agent_core.state.testing import free_port
from agent_core.state_factory import StateSettings, build_state
from agent_core.users import User
from tests.adapters.teams import payloads
from tests.bots.slack.harness import SECRET, add_users
from tests.dev.conftest import parse_sse
from tests.e2e.slack_cluster import REPO_ROOT, BotProcess, SlackSender, mention
from tests.e2e.teams_cluster import BotProcess as TeamsProcess
from tests.e2e.teams_cluster import add_members, bot_environment, final_answer

APP = "examples/weather.py:agent"
ANSWER = "Today in Lisbon it is 21°C, sunny."


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any Threadline, Slack, Teams or Anthropic setting."""
    prefixes = ("SLACK_", "THREADLINE_", "ANTHROPIC_", "Microsoft", "TEAMS_", "TO_", "REDIS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return env | {"PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1", **extra}


async def stored_conversation(data_dir: Path, conversation_id: str, user_id: str) -> list[str]:
    """What the bot's SQLite state holds for the conversation, as the agent saved it."""
    state = build_state(StateSettings(data_dir=data_dir))
    try:
        found = await state.conversations.get_conversation(conversation_id, User(id=user_id))
        return [message.content or "" for message in found.messages] if found else []
    finally:
        await state.aclose()


async def test_your_agent_answers_in_slack_with_workspace_identity_and_durable_state(
    tmp_path: Path,
) -> None:
    async with FakeSlackApi() as fake, aiohttp.ClientSession() as session:
        add_users(fake)
        port = free_port()
        env = clean_env(
            SLACK_BOT_TOKEN="xoxb-test",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=fake.base_url,
            HOST="127.0.0.1",
            PORT=str(port),
            THREADLINE_DATA_DIR=str(tmp_path),
        )
        command = [sys.executable, "-m", "bots.cli", "slack", "--app", APP]
        bot = BotProcess("slack", command, env)
        await bot.start()
        try:
            event = mention("Weather in Lisbon?", ts="100.000100")
            assert await SlackSender(session).event(port, event, event_id="Ev1") == 200
            await asyncio.wait_for(
                fake.wait_for(
                    lambda f: any(ANSWER in m.text for m in f.thread("C1", "100.000100"))
                ),
                20,
            )
        finally:
            assert await bot.stop() == 0, bot.output()
    assert "brings its own" not in bot.output()  # it left identity and state to Slack
    saved = await stored_conversation(tmp_path, "slack:T1:C1:100.000100", "slack:T1:U1")
    assert saved[0] == "Weather in Lisbon?" and saved[-1] == ANSWER


async def test_your_agent_answers_in_teams_with_workspace_identity_and_durable_state(
    tmp_path: Path,
) -> None:
    async with FakeBotConnector() as fake, aiohttp.ClientSession() as session:
        add_members(fake)
        env = clean_env(
            **{
                k: v
                for k, v in bot_environment(fake, "", "", tmp_path).items()
                if k != "REDIS_URL" and k != "THREADLINE_REDIS_PREFIX"
            }
        )
        bot = TeamsProcess(env, tmp_path / "teams.log", arguments=["--app", APP])
        try:
            await bot.ready(session)
            activity = payloads.message("Weather in Lisbon?", service_url=fake.url)
            assert await bot.post(session, fake, activity) == 201
            answer = await fake.wait_for(lambda call: final_answer(call, activity["id"]))
            assert ANSWER in (answer.text or ""), bot.output()
        finally:
            bot.stop()
    conversation = f"teams:{payloads.TENANT}:{activity['conversation']['id']}"
    user = f"teams:{payloads.TENANT}:{activity['from']['aadObjectId']}"
    saved = await stored_conversation(tmp_path, conversation, user)
    assert saved[0] == "Weather in Lisbon?" and saved[-1] == ANSWER


async def test_your_agent_answers_in_the_console(tmp_path: Path) -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "bots.cli",
        "dev",
        "--app",
        APP,
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path),
    ]
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=REPO_ROOT,
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        banner = await asyncio.wait_for(process.stdout.readline(), 30)
        assert f"http://127.0.0.1:{port}/" in banner.decode(), banner
        body = {"text": "Weather in Lisbon?", "thread_id": "t1", "persona": {"place": "dm"}}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"http://127.0.0.1:{port}/api/turns", json=body) as response,
        ):
            stream = (await response.read()).decode()
        events = [parse_sse(chunk) for chunk in stream.split("\n\n") if chunk.strip()]
        texts = [
            data["rich_component"].get("content")
            for name, data in filter(None, events)
            if name == "component" and data["rich_component"]["type"] == "text"
        ]
        assert texts[-1] == ANSWER
        slack = [data for name, data in filter(None, events) if name == "slack"]
        assert any(ANSWER in json.dumps(data, ensure_ascii=False) for data in slack)  # Slack too
    finally:
        process.terminate()
        await process.wait()


def test_your_agent_answers_in_the_terminal_chat(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bots.cli", "chat", "--app", APP, "--data-dir", str(tmp_path)],
        input="Weather in Lisbon?\n",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=clean_env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert ANSWER in result.stdout


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("examples/no_such_file.py:agent", "no file"),
        ("examples/weather.py:nothing", "has no attribute 'nothing'"),
        ("examples.weather:Weather", "expected an Agent or a function returning one"),
    ],
)
def test_a_wrong_app_stops_the_command_with_the_reason(target: str, problem: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bots.cli", "chat", "--app", target],
        input="",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=clean_env(),
        timeout=60,
    )
    assert result.returncode == 2 and problem in result.stderr, result.stderr


SLOW_APP = """
import sys, time
sys.path.insert(0, {repo!r})
from examples.weather import agent as weather

def agent(runtime):
    print("factory started", file=sys.stderr, flush=True)
    time.sleep(0.5)  # a factory that connects to things, say
    print("factory done", file=sys.stderr, flush=True)
    return weather(runtime)
"""


async def test_a_slow_factory_is_built_before_the_bot_listens_and_dotenv_secrets_stay_out_of_logs(
    tmp_path: Path,
) -> None:
    """Decision (README, "Deploying it"): the agent is built before the HTTP server listens,
    so a load balancer's health check never reaches a bot that cannot answer yet. Secrets
    from ``.env`` are used, never logged."""
    (tmp_path / "slow_bot.py").write_text(SLOW_APP.format(repo=str(REPO_ROOT)))
    async with FakeSlackApi() as fake:
        add_users(fake)
        (tmp_path / ".env").write_text(
            f"SLACK_BOT_TOKEN=xoxb-dotenv-secret\nSLACK_SIGNING_SECRET={SECRET}\n"
        )
        env = clean_env(
            SLACK_API_URL=fake.base_url,
            HOST="127.0.0.1",
            PORT=str(free_port()),
            THREADLINE_DATA_DIR=str(tmp_path / "data"),
        )
        command = [sys.executable, "-m", "bots.cli", "slack", "--app", "slow_bot.py:agent"]
        bot = BotProcess("slack", command, env, cwd=tmp_path)
        await bot.start()
        assert await bot.stop() == 0, bot.output()
    lines = bot.lines
    done = next(i for i, line in enumerate(lines) if "factory done" in line)
    listening = next(i for i, line in enumerate(lines) if "listening on http://" in line)
    assert done < listening
    assert "xoxb-dotenv-secret" not in bot.output() and SECRET not in bot.output()
