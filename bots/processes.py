"""Run one bot as N processes behind one port: ``threadline teams --processes 4``.

The parent reserves the port, then starts N copies of the bot's command as child processes.
Each child listens on that same port with ``SO_REUSEPORT`` (it sees ``THREADLINE_REUSE_PORT=1``),
so the Linux kernel spreads new connections across them. The parent only supervises: a child
that dies (``kill -9``, out of memory) is started again after a short pause, a child that
exits with status 2 (bad configuration) stops them all, and SIGINT / SIGTERM stop every child
gracefully (SIGKILL after ``grace`` seconds).

The children must share their state (``REDIS_URL``): a message accepted by one is answered by
whichever is free, and a turn a dead child was running is taken over by another.

Where ``SO_REUSEPORT`` does not balance connections (macOS, Windows), run N single
processes on their own ports behind any load balancer instead; that is all ``--processes``
automates. Any subcommand can use it: pass the child's ``threadline`` arguments.

>>> without_option(["teams", "--processes", "4", "--scripted", "--processes=2"], "--processes")
['teams', '--scripted']
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.state_factory import StateSettings

logger = logging.getLogger("threadline.processes")

REUSE_PORT_ENV = "THREADLINE_REUSE_PORT"
PROCESS_INDEX_ENV = "THREADLINE_PROCESS_INDEX"
CONFIG_ERROR = 2
"""The exit status of a child that cannot start as configured: restarting it would not help."""


def check_processes(processes: int, state: StateSettings) -> None:
    """Refuse a process count that cannot work (``ValueError`` naming what to change): the
    same rule for every bot (a channel adds its platform's own limits).

    >>> from agent_core.state_factory import StateSettings
    >>> check_processes(2, StateSettings(redis_url="redis://cache:6379/0"))
    >>> check_processes(2, StateSettings(ephemeral=True))
    Traceback (most recent call last):
    ValueError: --processes needs shared state: set REDIS_URL (2 processes share ...
    """
    if processes < 1:
        raise ValueError("--processes must be at least 1")
    if processes > 1 and state.backend != "redis":
        raise ValueError(
            f"--processes needs shared state: set REDIS_URL ({processes} processes share "
            "conversations, turns and caches through Redis; the state is "
            f"{state.describe()}, which belongs to one process)"
        )


def reuse_port() -> bool:
    """True in a child started by ``run_processes``: listen with ``SO_REUSEPORT``."""
    return os.environ.get(REUSE_PORT_ENV) == "1"


def reuse_port_supported() -> bool:
    """Whether this platform balances connections over ``SO_REUSEPORT`` listeners (Linux)."""
    return hasattr(socket, "SO_REUSEPORT") and sys.platform.startswith("linux")


def without_option(argv: Sequence[str], option: str) -> list[str]:
    """``argv`` without ``option VALUE`` / ``option=VALUE`` (the children run one each)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "="):
            kept.append(arg)
    return kept


def reserve_port(host: str, port: int) -> socket.socket:
    """Bind (without listening) a ``SO_REUSEPORT`` socket on ``host:port``: the port is ours
    (a port in use fails here, once) and ``port=0`` becomes a real port the children share.
    A socket that does not listen never receives connections."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    reserved = socket.socket(family, socket.SOCK_STREAM)
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    reserved.bind((host, port))
    return reserved


class Supervisor:
    """Starts ``count`` children running ``command`` and keeps them running until stopped.

    >>> Supervisor(["python", "-c", "pass"], count=2).count
    2
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        count: int,
        env: Mapping[str, str] | None = None,
        restart_delay: float = 1.0,
        grace: float = 15.0,
    ) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.command = list(command)
        self.count = count
        self.env = dict(os.environ if env is None else env)
        self.restart_delay = restart_delay
        self.grace = grace
        self.children: dict[int, asyncio.subprocess.Process] = {}
        self._started: dict[int, float] = {}
        self._stopping = asyncio.Event()
        self._status = 0

    def stop(self) -> None:
        self._stopping.set()

    async def _spawn(self, index: int) -> asyncio.subprocess.Process:
        env = {**self.env, REUSE_PORT_ENV: "1", PROCESS_INDEX_ENV: str(index)}
        child = await asyncio.create_subprocess_exec(*self.command, env=env)
        self.children[index] = child
        self._started[index] = time.monotonic()
        logger.info("process %d started (pid %d)", index, child.pid)
        return child

    async def run(self) -> int:
        """Supervise until ``stop()`` (or a configuration error); the exit status."""
        waits: dict[asyncio.Task[int], int] = {}
        for index in range(self.count):
            waits[asyncio.create_task((await self._spawn(index)).wait())] = index
        stopping = asyncio.create_task(self._stopping.wait())
        delay = self.restart_delay
        try:
            while not self._stopping.is_set():
                done, _ = await asyncio.wait(
                    {*waits, stopping}, return_when=asyncio.FIRST_COMPLETED
                )
                for finished in done - {stopping}:
                    index = waits.pop(finished)
                    delay = await self._exited(index, finished.result(), delay)
                    if not self._stopping.is_set():
                        waits[asyncio.create_task((await self._spawn(index)).wait())] = index
        finally:
            stopping.cancel()
            await self._terminate()
            for wait in waits:
                wait.cancel()
        return self._status

    async def _exited(self, index: int, status: int, delay: float) -> float:
        """Log the exit and pause before the restart; the next pause (doubled while the
        child keeps dying within a minute of its start)."""
        if status == CONFIG_ERROR:
            logger.error("process %d cannot start as configured; stopping", index)
            self._status = CONFIG_ERROR
            self._stopping.set()
            return delay
        if time.monotonic() - self._started.get(index, 0.0) >= 60:
            delay = self.restart_delay  # it ran fine for a while: not a crash loop
        logger.warning(
            "process %d exited with status %d; restarting in %.1fs", index, status, delay
        )
        try:  # a pause between restarts, cut short by a stop
            await asyncio.wait_for(self._stopping.wait(), delay)
        except TimeoutError:
            pass
        return min(delay * 2, 30.0)

    async def _terminate(self) -> None:
        running = [c for c in self.children.values() if c.returncode is None]
        for child in running:
            child.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(self.grace):
                await asyncio.gather(*(c.wait() for c in running))
        except TimeoutError:
            for child in running:
                if child.returncode is None:
                    child.kill()
            await asyncio.gather(*(c.wait() for c in running))


def supervise(command: Sequence[str], count: int) -> int:
    """Run ``count`` copies of ``command`` (each sees ``THREADLINE_REUSE_PORT=1`` and its
    ``THREADLINE_PROCESS_INDEX``) until SIGINT / SIGTERM; the exit status. Blocks."""

    async def run() -> int:
        supervisor = Supervisor(command, count=count)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, supervisor.stop)
        return await supervisor.run()

    return asyncio.run(run())


def run_processes(argv: Sequence[str], *, count: int, host: str, port: int) -> int:
    """Run ``threadline ARGV --host HOST --port PORT`` as ``count`` processes sharing the
    port; blocks until SIGINT / SIGTERM. The exit status."""
    if not reuse_port_supported():
        print(
            "threadline: --processes needs SO_REUSEPORT (Linux); run one process per port "
            "behind a load balancer instead",
            file=sys.stderr,
        )
        return CONFIG_ERROR
    try:
        reserved = reserve_port(host, port)
    except OSError as error:
        print(f"threadline: cannot listen on {host}:{port}: {error}", file=sys.stderr)
        return CONFIG_ERROR
    port = reserved.getsockname()[1]
    command = [sys.executable, "-m", "bots.cli", *argv, "--host", host, "--port", str(port)]
    logger.info("starting %d processes on %s:%d", count, host, port)
    try:
        return supervise(command, count)
    finally:
        reserved.close()
