"""The whole Slack bot under test: fake Slack Web API + real bolt app over HTTP.

``SlackHarness`` signs payloads like Slack does (``v0`` HMAC with the signing secret), posts
them to the bot's real aiohttp endpoint and exposes the fake's record of Web API calls.
The bot runs on in-memory state unless a test passes its own (``state=``: Redis, SQLite).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from slack_sdk.signature import SignatureVerifier

from adapters.slack.testing import FakeSlackApi
from agent_core import Agent, InMemoryAuditLogger, LifecycleHook, UserResolver
from agent_core.llm.scripted import ScriptEntry
from agent_core.state_factory import State, StateSettings, build_state
from bots.files import SharedFiles
from bots.slack.app import build_web_app
from bots.slack.bot import SlackBot
from bots.slack.clients import build_user_resolver, default_clients
from bots.slack.settings import SlackSettings
from tests.bots.slack.agents import build_agent

SECRET = "test-signing-secret"
TOKEN = "xoxb-test"


def sign(body: bytes, *, timestamp: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


def add_users(fake: FakeSlackApi) -> None:
    for user_id, name in (("U1", "Ana"), ("U2", "Bo"), ("UADMIN", "Alex")):
        fake.users[user_id] = {
            "id": user_id,
            "team_id": fake.team_id,
            "profile": {"display_name": name, "email": f"{name.lower()}@acme.io"},
        }
    fake.usergroups = [{"id": "S1", "handle": "analysts", "users": ["U1", "UADMIN"]}]


class SlackHarness:
    """Drive the bot like Slack would; assert on ``harness.fake``."""

    def __init__(self, fake: FakeSlackApi, bot: SlackBot, http: TestClient) -> None:
        self.fake = fake
        self.bot = bot
        self.http = http
        self._events = 0

    @property
    def agent(self) -> Agent:
        return self.bot.agent

    async def post(self, body: bytes, headers: dict[str, str], content_type: str) -> Any:
        response = await self.http.post(
            "/slack/events", data=body, headers={**headers, "Content-Type": content_type}
        )
        return response

    async def event(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        retry: int | None = None,
        team: str = "T1",
        enterprise: str | None = None,
        envelope: dict[str, Any] | None = None,
    ) -> Any:
        """``enterprise``: from a workspace of that Grid organisation, installed org-wide;
        ``envelope``: more fields of the event callback (``is_ext_shared_channel``...)."""
        self._events += 1
        callback: dict[str, Any] = {
            "token": "legacy",
            "team_id": team,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id or f"Ev{self._events}",
            "event_time": int(time.time()),
            "event": event,
            **(envelope or {}),
        }
        if enterprise:
            callback["enterprise_id"] = enterprise
            callback["authorizations"] = [
                {"enterprise_id": enterprise, "team_id": None, "is_enterprise_install": True}
            ]
        body = json.dumps(callback).encode()
        headers = sign(body)
        if retry is not None:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        return await self.post(body, headers, "application/json")

    async def command(
        self, text: str, *, user: str = "U1", channel: str = "C1", command: str = "/ask"
    ) -> Any:
        form = {
            "token": "legacy",
            "team_id": "T1",
            "team_domain": "acme",
            "channel_id": channel,
            "channel_name": "general",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": "A1",
            "response_url": self.fake.response_url("cmd"),
            "trigger_id": "trig",
        }
        body = urllib.parse.urlencode(form).encode()
        return await self.post(body, sign(body), "application/x-www-form-urlencoded")

    async def action(
        self,
        action_id: str,
        value: str,
        *,
        user: str = "U1",
        channel: str = "C1",
        message_ts: str = "",
        thread_ts: str | None = None,
        ephemeral: bool = False,
        block_id: str = "b",
        team: str = "T1",
        timestamp: int | None = None,
        secret: str = SECRET,
    ) -> Any:
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": ephemeral,
        }
        if thread_ts:
            container["thread_ts"] = thread_ts
        payload = {
            "type": "block_actions",
            "team": {"id": team, "domain": "acme"},
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A1",
            "token": "legacy",
            "container": container,
            "trigger_id": "trig",
            "channel": {"id": channel, "name": "general"},
            "message": {"ts": message_ts, **({"thread_ts": thread_ts} if thread_ts else {})},
            "response_url": self.fake.response_url("action"),
            "actions": [
                {"action_id": action_id, "block_id": block_id, "value": value, "type": "button"}
            ],
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        headers = sign(body, timestamp=timestamp, secret=secret)
        return await self.post(body, headers, "application/x-www-form-urlencoded")

    async def deliver(self, body: dict[str, Any]) -> Any:
        """An Events API delivery built elsewhere (``adapters.slack.testing``), signed."""
        raw = json.dumps(body).encode()
        return await self.post(raw, sign(raw), "application/json")

    async def interaction(self, payload: dict[str, Any], *, secret: str = SECRET) -> Any:
        """An interaction (a shortcut, a click) built elsewhere, signed as a form."""
        raw = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        return await self.post(raw, sign(raw, secret=secret), "application/x-www-form-urlencoded")

    async def idle(self) -> None:
        await self.bot.idle(timeout=20)

    def llm_questions(self) -> list[str]:
        """The last user message of every LLM request, in order."""
        llm = self.agent.llm_service
        return [r.messages[-1].content or "" for r in llm.requests if r.messages]  # type: ignore[attr-defined]


AgentFactory = Callable[[UserResolver, State], Agent]
"""Builds the bot's agent from the bot's user resolver and state (its memory and
conversation stores), instead of the scripted agent of ``tests.bots.slack.agents``."""


@asynccontextmanager
async def running_bot(
    tmp_path: Path,
    script: Sequence[ScriptEntry],
    *,
    latency: float = 0.0,
    then: ScriptEntry | None = None,
    hooks: Sequence[LifecycleHook] = (),
    audit: InMemoryAuditLogger | None = None,
    state: State | None = None,
    fake: FakeSlackApi | None = None,
    agent_factory: AgentFactory | None = None,
    files: SharedFiles | None = None,
    **settings: Any,
) -> AsyncIterator[SlackHarness]:
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(FakeSlackApi())
        add_users(fake)
        options: dict[str, Any] = {
            "bot_token": TOKEN,
            "signing_secret": SECRET,
            "api_url": fake.base_url,
            "admin_users": ["UADMIN"],
            "group_map": {"S1": ["analysts"]},
            "stream_interval": 0,
            "stop_button_after": 60,
            **settings,
        }
        slack_settings = SlackSettings(**options)
        state = state or build_state(StateSettings(ephemeral=True))
        clients = default_clients(slack_settings, state)
        resolver = build_user_resolver(slack_settings, clients, state.cache)
        agent = (
            agent_factory(resolver, state)
            if agent_factory is not None
            else build_agent(
                script,
                resolver,
                latency=latency,
                then=then,
                memory=state.memory,
                conversations=state.conversations,
            )
        )
        for served in agent.served_agents():
            served.lifecycle_hooks.extend(hooks)
            if audit is not None:
                served.audit_logger = audit
        bot = SlackBot(agent, slack_settings, state=state, clients=clients, files=files)
        await bot.open()
        try:
            async with TestClient(TestServer(build_web_app(bot))) as http:
                yield SlackHarness(fake, bot, http)
        finally:
            await bot.close(timeout=0)
