"""Fixtures for the demo agent: a scripted-model agent over a fresh sample database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.agent import Agent
from agent_core.components import UiComponent
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.users import RequestContext
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.demo.data import DATABASE_NAME


@pytest.fixture
def memory() -> InMemoryAgentMemory:
    return InMemoryAgentMemory()


@pytest.fixture
def settings(tmp_path: Path, memory: InMemoryAgentMemory) -> DemoSettings:
    return DemoSettings(
        data_dir=tmp_path, use_scripted_model=True, admin_user_ids=["UADMIN"], agent_memory=memory
    )


@pytest.fixture
def agent(settings: DemoSettings) -> Agent:
    return build_demo_agent(settings)


@pytest.fixture
def shop(agent: Agent, tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A direct connection to the demo database, to check answers independently."""
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    yield db
    db.close()


def slack_context(user_id: str = "U1", *, is_dm: bool = False) -> RequestContext:
    return RequestContext(
        metadata={
            "platform": "slack",
            "workspace_id": "T1",
            "user_id": user_id,
            "channel_id": "C1",
            "thread_id": "1.0",
            "is_dm": is_dm,
        }
    )


async def ask(
    agent: Agent, text: str, *, user_id: str = "U1", conversation_id: str = "slack:T1:C1:1.0"
) -> list[UiComponent]:
    return [
        c
        async for c in agent.send_message(
            slack_context(user_id), text, conversation_id=conversation_id
        )
    ]
