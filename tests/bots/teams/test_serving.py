"""``threadline teams`` as it serves: the lifecycle every channel shares (``bots.server``),
and, with authentication off, loopback only.

Issue 22, item 4: with no ``MicrosoftAppId`` and no ``--host`` the bot listened on every
interface; anyone who could reach it could claim any ``aadObjectId`` (an admin's) and pick
the service URL the answer went to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from agent_core import Agent, ScriptedLlmService, ToolRegistry
from agent_core.state.testing import free_port
from agent_core.state_factory import State, StateSettings
from agent_core.users import UserResolver
from bots.teams.app import serve
from bots.teams.settings import TeamsSettings


def scripted(state: State, resolver: UserResolver) -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(then="hi"),
        tool_registry=ToolRegistry(),
        user_resolver=resolver,
        agent_memory=state.memory,
        conversation_store=state.conversations,
    )


def outward_address() -> str | None:
    """An address of this machine that is not loopback (how others would reach it)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        address = str(probe.getsockname()[0])
        if not address.startswith("127."):
            return address
    return None


class Listening(logging.Handler):
    """Sets ``ready`` when the server logs that it listens (an event, not a poll)."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if "listening on" in record.getMessage():
            self.ready.set()


@contextlib.contextmanager
def listening() -> Iterator[Listening]:
    handler = Listening()
    logger = logging.getLogger("bots.teams.app")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.level = level


@contextlib.asynccontextmanager
async def served(settings: TeamsSettings) -> AsyncIterator[Listening]:
    with listening() as handler:
        task = asyncio.create_task(serve(settings, StateSettings(ephemeral=True), scripted))
        try:
            await asyncio.wait_for(handler.ready.wait(), 20)
            yield handler
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def reachable(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
    except OSError:
        return False
    writer.close()
    return True


async def test_without_authentication_only_loopback_reaches_the_bot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression (issue 22): auth off listened on 0.0.0.0."""
    outward = outward_address()
    if outward is None:
        pytest.skip("this machine has no address other than loopback")
    port = free_port()
    async with served(TeamsSettings(host="0.0.0.0", port=port)) as server:
        assert await reachable("127.0.0.1", port)
        assert not await reachable(outward, port)
        assert any(f"listening on http://127.0.0.1:{port}" in line for line in server.lines)
    assert "not authenticated, so the server listens on 127.0.0.1 only" in caplog.text


async def test_an_explicit_flag_lets_an_unauthenticated_bot_listen_everywhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outward = outward_address()
    if outward is None:
        pytest.skip("this machine has no address other than loopback")
    port = free_port()
    settings = TeamsSettings(host="0.0.0.0", port=port, allow_unauthenticated_remote=True)
    async with served(settings):
        assert await reachable(outward, port)
    assert "requests are NOT authenticated" in caplog.text
