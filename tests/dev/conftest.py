"""Fixtures for the console: the demo agent (scripted model) behind the console's app, and a
client that reads a turn's Server-Sent Events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from agent_core.agent import Agent
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.dev.app import create_app
from bots.dev.identity import ConsoleUserResolver
from bots.dev.turns import ConsoleOptions

ANA = {"user_id": "U0ANA", "name": "Ana", "groups": ["user"], "place": "dm"}
ALEX = {"user_id": "U0ALEX", "name": "Alex", "groups": ["user", "admin"], "place": "dm"}


def persona(base: dict[str, Any], place: str) -> dict[str, Any]:
    return {**base, "place": place}


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sample database for the whole session (it is only read)."""
    return tmp_path_factory.mktemp("console-data")


def demo_agent(data_dir: Path, *, stream_delay: float = 0.0) -> Agent:
    return build_demo_agent(
        DemoSettings(
            data_dir=data_dir,
            use_scripted_model=True,
            stream_delay=stream_delay,
            user_resolver=ConsoleUserResolver(),
        )
    )


@pytest.fixture
def agent(data_dir: Path) -> Agent:
    return demo_agent(data_dir, stream_delay=0.01)


@dataclass
class TurnEvents:
    """A turn's events as the page receives them."""

    events: list[tuple[str, Any]] = field(default_factory=list)

    def of(self, name: str) -> list[Any]:
        return [data for event, data in self.events if event == name]

    @property
    def turn_id(self) -> str:
        return str(self.of("turn")[0]["id"])

    @property
    def outcome(self) -> str:
        return str(self.of("turn")[-1]["state"])

    def slack_messages(self) -> dict[str, dict[str, Any]]:
        """Each Slack message's last state, by ts (deleted ones left out)."""
        messages: dict[str, dict[str, Any]] = {}
        for data in self.of("slack"):
            if data["op"] == "delete":
                messages.pop(data["message"]["ts"], None)
            elif "message" in data:
                messages[data["message"]["ts"]] = data["message"]
        return messages

    def teams_activities(self) -> list[dict[str, Any]]:
        return self.of("teams")

    def components(self, kind: str) -> list[dict[str, Any]]:
        return [c for c in self.of("component") if c["rich_component"]["type"] == kind]


def parse_sse(chunk: str) -> tuple[str, Any] | None:
    event, data = "message", ""
    for line in chunk.split("\n"):
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data += line[6:]
    return (event, json.loads(data)) if data else None


class Console:
    """The console app under test, driven like the page drives it."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    async def ask(
        self,
        text: str,
        who: dict[str, Any] = ANA,
        *,
        thread: str = "1700000000.000100",
        on_event: Any = None,
        files: list[str] | None = None,
    ) -> TurnEvents:
        response = await self.client.post(
            "/api/turns",
            json={"text": text, "thread_id": thread, "persona": who, "files": files or []},
        )
        return await self._events(response, on_event)

    async def click(
        self,
        approval_id: str,
        decision: str,
        who: dict[str, Any] = ANA,
        *,
        channel: str = "slack",
        thread: str = "1700000000.000100",
    ) -> TurnEvents:
        """A click on an approval message's button, as ``who`` (the persona switch)."""
        response = await self.client.post(
            "/api/approvals",
            json={
                "approval_id": approval_id,
                "decision": decision,
                "channel": channel,
                "thread_id": thread,
                "persona": who,
            },
        )
        return await self._events(response)

    async def _events(self, response: Any, on_event: Any = None) -> TurnEvents:
        assert response.status == 200, await response.text()
        assert response.content_type == "text/event-stream"
        events = TurnEvents()
        buffer = ""
        async for data in response.content.iter_any():
            buffer += data.decode()
            while "\n\n" in buffer:
                chunk, buffer = buffer.split("\n\n", 1)
                parsed = parse_sse(chunk)
                if parsed is not None:
                    events.events.append(parsed)
                    if on_event is not None:
                        await on_event(*parsed)
        return events


@pytest.fixture
async def console(agent: Agent) -> AsyncIterator[Console]:
    app = create_app(agent, options=ConsoleOptions(pace=0.02))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Console(client)
