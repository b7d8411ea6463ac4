"""deploy/healthcheck.py, the image's HEALTHCHECK: healthy only on a 200 from ``/healthz``,
unhealthy on a 503 (the state backend down) or when nothing answers, and never sent through
a proxy the container is configured with."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from agent_core.state.testing import free_port
from tests.deploy.files import DEPLOY


@pytest.fixture
async def bot() -> AsyncIterator[tuple[int, dict[str, int]]]:
    """A stand-in ``/healthz`` whose status the test sets."""
    answer = {"status": 200}

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": answer["status"] == 200}, status=answer["status"])

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield port, answer
    await runner.cleanup()


async def healthcheck(port: int, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DEPLOY / "healthcheck.py"),
        env={**clean, "PORT": str(port), **env},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_healthy_only_on_200(bot: tuple[int, dict[str, int]]) -> None:
    port, answer = bot
    status, said = await healthcheck(port)
    assert (status, said.split()[0]) == (0, "200")
    answer["status"] = 503
    status, said = await healthcheck(port)
    assert (status, said.split()[0]) == (1, "503")


async def test_unhealthy_when_nothing_answers() -> None:
    status, said = await healthcheck(free_port())
    assert status == 1 and "/healthz" in said


async def test_a_configured_proxy_is_not_used(bot: tuple[int, dict[str, int]]) -> None:
    """Regression: urllib sends 127.0.0.1 through HTTP_PROXY unless told not to, so a
    container behind a corporate proxy would report itself unhealthy forever."""
    port, _ = bot
    dead = f"http://127.0.0.1:{free_port()}"
    status, _ = await healthcheck(port, HTTP_PROXY=dead, http_proxy=dead, NO_PROXY="")
    assert status == 0
