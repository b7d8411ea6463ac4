"""``bots.processes``: the supervisor behind ``--processes N`` (real child processes), and
the process counts ``threadline teams`` refuses."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bots.cli import main
from bots.processes import CONFIG_ERROR, Supervisor, reserve_port

SLEEPER = "import time; time.sleep(60)"


async def until(condition: Callable[[], bool], *, timeout: float = 10.0) -> None:
    """Poll a condition about other processes (they cannot signal us), with a deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_children_are_started_and_stopped_together() -> None:
    supervisor = Supervisor([sys.executable, "-c", SLEEPER], count=2, grace=5)
    running = asyncio.create_task(supervisor.run())
    await until(lambda: len(supervisor.children) == 2)
    supervisor.stop()
    assert await running == 0
    assert all(child.returncode is not None for child in supervisor.children.values())


async def test_a_child_that_dies_is_started_again(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    child = (
        "import pathlib, sys, time; p = pathlib.Path(sys.argv[1]); "
        "p.write_text(p.read_text() + 'x' if p.exists() else 'x'); "
        "sys.exit(1) if len(p.read_text()) == 1 else time.sleep(60)"
    )
    supervisor = Supervisor(
        [sys.executable, "-c", child, str(starts)], count=1, restart_delay=0.01, grace=5
    )
    running = asyncio.create_task(supervisor.run())
    await until(lambda: starts.exists() and starts.read_text() == "xx")
    supervisor.stop()
    assert await running == 0


async def test_a_child_that_cannot_start_as_configured_stops_everything() -> None:
    supervisor = Supervisor(
        [sys.executable, "-c", f"raise SystemExit({CONFIG_ERROR})"],
        count=2,
        restart_delay=0.01,
        grace=5,
    )
    assert await asyncio.wait_for(supervisor.run(), 10) == CONFIG_ERROR


def test_the_reserved_port_is_shared_but_receives_nothing() -> None:
    reserved = reserve_port("127.0.0.1", 0)
    port = reserved.getsockname()[1]
    try:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            accepted, _ = listener.accept()  # the listening child gets every connection
            accepted.close()
        listener.close()
    finally:
        reserved.close()


@pytest.mark.parametrize("extra", [["--ephemeral"], []])
def test_many_processes_need_redis(
    extra: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("MicrosoftAppId", raising=False)
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path))
    assert main(["teams", "--processes", "2", *extra]) == 2
    assert "--processes needs shared state: set REDIS_URL" in capsys.readouterr().err
