"""``bots.server``: the lifecycle and the limits every Threadline HTTP server keeps.

Issue 22, item 10: a client that sends half a request (slowloris) must not hold a
connection; 200 half-sent requests to the Slack bot's own server stayed open for as long
as the clients liked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bots.server import HttpLimits, bound_port, listen, listen_host
from bots.slack.app import build_web_app
from tests.bots.slack.harness import running_bot

QUICK = HttpLimits(head_seconds=0.5, body_seconds=0.5)


@contextlib.asynccontextmanager
async def slack_server(tmp_path: Path) -> AsyncIterator[int]:
    """The Slack bot's real web app, served as ``threadline slack`` serves it."""
    async with running_bot(tmp_path, ["hi"]) as harness:
        runner = await listen(build_web_app(harness.bot), "127.0.0.1", 0, limits=QUICK)
        try:
            yield bound_port(runner, 0)
        finally:
            await runner.cleanup()


async def closed_by_the_server(reader: asyncio.StreamReader, *, within: float) -> bool:
    """Whether the server closes the connection (EOF or a reset) within ``within`` s."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(1024):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


async def test_half_sent_request_heads_are_cut_off(tmp_path: Path) -> None:
    """Regression (issue 22): 200 half-sent requests stayed open 40 s."""
    async with slack_server(tmp_path) as port:
        connections = [await asyncio.open_connection("127.0.0.1", port) for _ in range(200)]
        for _, writer in connections:
            writer.write(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slack-")
            await writer.drain()
        closed = await asyncio.gather(
            *(closed_by_the_server(reader, within=5) for reader, _ in connections)
        )
        for _, writer in connections:
            writer.close()
        assert all(closed), f"{closed.count(False)} of 200 half-sent requests still open"
        async with aiohttp.ClientSession() as session:  # the server still answers
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200


async def test_a_body_that_never_arrives_is_cut_off(tmp_path: Path) -> None:
    async with slack_server(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"type":'
        )
        await writer.drain()
        assert await closed_by_the_server(reader, within=5)
        writer.close()


def test_unauthenticated_servers_listen_on_loopback_unless_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert listen_host("0.0.0.0", authenticated=False, allow_remote=False, what="x") == "127.0.0.1"
    assert "not authenticated" in caplog.text
    assert listen_host("0.0.0.0", authenticated=False, allow_remote=True, what="x") == "0.0.0.0"
    assert listen_host("0.0.0.0", authenticated=True, allow_remote=False, what="x") == "0.0.0.0"
