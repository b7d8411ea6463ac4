"""A real ``redis-server`` on a free loopback port, for tests and benchmarks: start, stop,
restart, kill.

Persistence is off (``--save "" --appendonly no``) and its files live in the directory you
give, so a restart is the same as a Redis that lost its data. Readiness is polled (PING over
a socket) with a deadline: the one place a test waits on a real server. Point the state
layer at ``server.url``::

    server = RedisServer(tmp_path / "redis")
    server.start()
    state = build_state(StateSettings(redis_url=server.url))
    ...
    server.stop(kill=True)  # as in a crash

>>> import tempfile
>>> from pathlib import Path
>>> RedisServer(Path(tempfile.mkdtemp()), port=6390).url
'redis://127.0.0.1:6390/0'
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Self

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (servers under test bind to loopback only).

    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_available() -> bool:
    """Whether ``redis-server`` is installed (on the PATH or in /usr/bin)."""
    return Path(REDIS_SERVER).exists()


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; ``stop`` / ``start`` keep the same port.
    ``persistent=True`` keeps the data across a restart (an append-only file synced on
    every write), as an outage that loses no data does."""

    def __init__(
        self, directory: Path, port: int | None = None, *, persistent: bool = False
    ) -> None:
        self.directory = directory
        self.persistent = persistent
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, *, timeout: float = 10.0) -> None:
        if self.running:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes" if self.persistent else "no",
            "--appendfsync",
            "always",
            "--dir",
            str(self.directory),
            "--daemonize",
            "no",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not _answers_ping(self.port):
            if self._process.poll() is not None:
                log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited on port {self.port}:\n{log}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"redis-server did not answer on port {self.port}")
            time.sleep(0.005)  # polling a real server's readiness, with a deadline

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server (``kill=True``: SIGKILL, as in a crash)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if kill:
            process.kill()
        else:
            process.terminate()
        process.wait(timeout=10)

    def __enter__(self) -> Self:
        """``with RedisServer(folder) as redis:`` starts it and stops it at the end."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def restart(self) -> None:
        self.stop()
        self.start()
