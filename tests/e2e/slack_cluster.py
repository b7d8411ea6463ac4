"""Real Slack bot processes for the multi-process tests, and a Slack that talks to them.

``slack_cluster`` starts the fake Slack Web API in the test process (127.0.0.1) and N bot
processes (``tests.e2e.slack_runner``: the real ``threadline slack`` wiring with a scripted
model) sharing one Redis, each on its own port (the test plays the load balancer) and with
its own bot token, so every Web API call tells which process made it. ``SlackSender``
signs deliveries like Slack and posts them to the process a test chooses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from adapters.slack.testing import FakeSlackApi, Message
from agent_core.state.testing import free_port
from tests.bots.slack.harness import SECRET, add_users, sign

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = "listening on http://"
START_TIMEOUT = 30.0
WAIT = 15.0
"""The deadline of every wait in these tests (seconds)."""


class BotProcess:
    """One bot process; its log (stderr) is collected for failure messages."""

    def __init__(
        self, name: str, command: Sequence[str], env: dict[str, str], *, cwd: Path = REPO_ROOT
    ) -> None:
        self.name = name
        self.cwd = cwd
        self.command = list(command)
        self.env = env
        self.port = int(env.get("PORT", "0"))
        self.token = env.get("SLACK_BOT_TOKEN", "")
        self.lines: list[str] = []
        self.process: asyncio.subprocess.Process | None = None
        self._listening = 0
        self._changed = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def output(self) -> str:
        return f"--- {self.name} ---\n" + "\n".join(self.lines[-60:])

    async def start(self, *, listeners: int = 1) -> None:
        """Start the process; return once ``listeners`` processes log that they listen."""
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        self._reader = asyncio.create_task(self._read())
        try:
            async with self._changed:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self._listening >= listeners), START_TIMEOUT
                )
        except TimeoutError:
            raise AssertionError(f"{self.name} did not start:\n{self.output()}") from None

    async def _read(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            async with self._changed:
                self.lines.append(line)
                self._listening += READY in line
                self._changed.notify_all()

    async def kill(self) -> None:
        """SIGKILL: no cleanup, no ack, its turns' leases left to expire."""
        assert self.process is not None
        self.process.kill()
        await self.process.wait()

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after the deadline; the exit status."""
        process = self.process
        if process is None:
            return None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), WAIT)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        return process.returncode


class SlackSender:
    """Posts signed Slack deliveries to one bot process (by port)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def post(self, port: int, body: bytes, content_type: str, **headers: str) -> int:
        url = f"http://127.0.0.1:{port}/slack/events"
        all_headers = {**sign(body), "Content-Type": content_type, **headers}
        async with self.session.post(url, data=body, headers=all_headers) as response:
            await response.read()
            return response.status

    async def event(
        self,
        port: int,
        event: dict[str, Any],
        *,
        event_id: str,
        retry: int = 0,
        team: str = "T1",
        enterprise: str | None = None,
    ) -> int:
        """``enterprise``: from a workspace of that Grid organisation, installed org-wide."""
        callback = {
            "token": "legacy",
            "team_id": team,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": event,
        }
        if enterprise:
            callback["enterprise_id"] = enterprise
            callback["authorizations"] = [
                {
                    "enterprise_id": enterprise,
                    "team_id": None,
                    "user_id": "UBOT",
                    "is_bot": True,
                    "is_enterprise_install": True,
                }
            ]
        body = json.dumps(callback).encode()
        retry_headers = (
            {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
            if retry
            else {}
        )
        return await self.post(port, body, "application/json", **retry_headers)

    async def action(
        self,
        port: int,
        action_id: str,
        value: str,
        *,
        user: str,
        message: Message,
        block_id: str = "b",
    ) -> int:
        payload = {
            "type": "block_actions",
            "team": {"id": "T1", "domain": "acme"},
            "user": {"id": user, "username": user.lower(), "team_id": "T1"},
            "api_app_id": "A1",
            "token": "legacy",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "thread_ts": message.thread_ts,
                "is_ephemeral": False,
            },
            "trigger_id": "trig",
            "channel": {"id": message.channel, "name": "general"},
            "message": {"ts": message.ts, "thread_ts": message.thread_ts},
            "response_url": "http://127.0.0.1:9/unused",
            "actions": [
                {"action_id": action_id, "block_id": block_id, "value": value, "type": "button"}
            ],
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        return await self.post(port, body, "application/x-www-form-urlencoded")

    async def health(self, port: int) -> tuple[int, dict[str, Any]]:
        url = f"http://127.0.0.1:{port}/healthz"
        async with self.session.get(url, headers={"Connection": "close"}) as response:
            return response.status, await response.json()


def mention(
    text: str, ts: str, *, thread_ts: str | None = None, user: str = "U1"
) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
        "client_msg_id": f"cm-{ts}",
    }
    return event | ({"thread_ts": thread_ts} if thread_ts else {})


def follow_up(text: str, ts: str, thread_ts: str, *, user: str = "U1") -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
        "thread_ts": thread_ts,
    }


def answers(fake: FakeSlackApi, thread_ts: str) -> list[Message]:
    """The bot's finished answers in a thread of C1, in the order they were posted."""
    return [
        m
        for m in fake.thread("C1", thread_ts)
        if m.text.startswith("Answer to") and not m.streaming
    ]


def texts(fake: FakeSlackApi, thread_ts: str) -> list[str]:
    return [m.text for m in fake.thread("C1", thread_ts)]


@dataclass
class Cluster:
    """The fake Slack, the bot processes and a sender; ``bots[i].port`` addresses one."""

    fake: FakeSlackApi
    bots: list[BotProcess]
    send: SlackSender

    def output(self) -> str:
        return "\n".join(bot.output() for bot in self.bots)

    async def wait_for(self, predicate: Callable[[FakeSlackApi], bool], what: str) -> None:
        try:
            await self.fake.wait_for(predicate, timeout=WAIT)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}\n{self.output()}") from None

    async def drained(self) -> None:
        """Until no turn is queued or running (on the shared Redis), with a deadline."""
        alive = next(bot for bot in self.bots if bot.process and bot.process.returncode is None)
        deadline = time.monotonic() + WAIT
        while True:
            status, health = await self.send.health(alive.port)
            if status == 200 and health["queued_turns"] == 0:
                return
            assert time.monotonic() < deadline, f"turns still queued: {health}\n{self.output()}"
            await asyncio.sleep(0.05)  # polling another process's queue, with a deadline


def bot_env(
    name: str, fake: FakeSlackApi, redis_url: str, prefix: str, data: Path
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "THREADLINE_", "ANTHROPIC_")) and k != "REDIS_URL"
    }
    return env | {
        "SLACK_BOT_TOKEN": f"xoxb-{name}",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake.base_url,
        "REDIS_URL": redis_url,
        "THREADLINE_REDIS_PREFIX": prefix,
        "THREADLINE_DATA_DIR": str(data / name),
        "HOST": "127.0.0.1",
        "PORT": str(free_port()),
        # a dead process's turn is taken over after 3 s: fast for the tests, and well above
        # the stalls of a machine running the suite in parallel (1 s lost leases under load)
        "THREADLINE_CLAIM_AFTER": "3",
        "E2E_STOP_AFTER": "0.2",
        "E2E_RUNS": str(data / "runs.txt"),
        "E2E_AGENT": os.environ.get("THREADLINE_TEST_AGENT", "agent"),
        "PYTHONUNBUFFERED": "1",
    }


RUNNER = [sys.executable, "-m", "tests.e2e.slack_runner"]


def oauth_env(fake: FakeSlackApi) -> dict[str, str]:
    """An app installed by OAuth (its tokens in the shared state), not one bot token."""
    return {"SLACK_CLIENT_ID": fake.client_id, "SLACK_CLIENT_SECRET": fake.client_secret}


@asynccontextmanager
async def slack_cluster(
    redis_url: str,
    prefix: str,
    data: Path,
    *,
    processes: int = 2,
    stop_after: float = 0.2,
    oauth: bool = False,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Cluster]:
    """Slack bots on one fake Slack and one Redis; their "Working on it… Stop" message shows
    ``stop_after`` seconds into a turn. ``oauth``: no bot token, installations in Redis
    (``oauth_env``); ``env``: more settings for every process."""
    async with FakeSlackApi() as fake:
        add_users(fake)
        bots = []
        for name in ("A", "B", "C", "D")[:processes]:
            process_env = bot_env(name, fake, redis_url, prefix, data) | (env or {})
            process_env["E2E_STOP_AFTER"] = str(stop_after)
            if oauth:
                del process_env["SLACK_BOT_TOKEN"]
                process_env |= oauth_env(fake)
            bots.append(BotProcess(name, RUNNER, process_env))
        try:
            await asyncio.gather(*(bot.start() for bot in bots))
            async with aiohttp.ClientSession() as session:
                yield Cluster(fake, bots, SlackSender(session))
        finally:
            await asyncio.gather(*(bot.stop() for bot in bots))
