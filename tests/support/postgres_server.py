"""A real PostgreSQL server on a free loopback port, for tests: start, stop, restart.

Debian's ``postgresql`` package (``scripts/test`` installs it) brings ``initdb`` and
``postgres``. PostgreSQL refuses to run as root, so under root the server runs as the
``postgres`` user, in a temporary directory that user owns. Password authentication is on
for TCP (``scram-sha-256``), so wrong credentials are really refused. Durability is off
(``fsync=off``): tests never need the data after a crash. Readiness is polled (a real
connection) with a deadline: the one place tests wait on a real server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_core.state.testing import free_port

SUPERUSER, SUPERUSER_PASSWORD = "postgres", "super-secret-pw"


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's ``bin`` folder."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    return Path(found[-1]).parent if found else None


def _version(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


def _drop_to() -> dict[str, Any]:
    """Popen arguments that run a command as ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


class PostgresServer:
    """One ``postgres`` process with its own data directory; ``stop`` / ``start`` keep the
    port and the data."""

    def __init__(self, port: int | None = None) -> None:
        binaries = postgres_bin()
        if binaries is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin = binaries
        self.port = port or free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="threadline-pg-"))
        self.data = self.directory / "data"
        self._process: subprocess.Popen[bytes] | None = None
        self._initdb()

    def _initdb(self) -> None:
        drop = _drop_to()
        if drop:
            os.chown(self.directory, drop["user"], drop["group"])
        password_file = self.directory / "pw"
        password_file.write_text(SUPERUSER_PASSWORD)
        if drop:
            os.chown(password_file, drop["user"], drop["group"])
        command = [
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--pwfile",
            str(password_file),
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]
        subprocess.run(command, check=True, capture_output=True, **drop)
        password_file.unlink()

    def url(
        self, user: str = SUPERUSER, password: str = SUPERUSER_PASSWORD, database: str = "postgres"
    ) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, *, timeout: float = 30.0) -> None:
        if self.running:
            return
        command = [
            str(self.bin / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-h",
            "127.0.0.1",
            "-k",
            str(self.directory),
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=60",
            "-c",
            "log_min_messages=fatal",
        ]
        with (self.directory / "server.log").open("ab") as log:  # the child keeps its copy
            self._process = subprocess.Popen(command, stdout=log, stderr=log, **_drop_to())
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self._process.poll() is not None:
                tail = (self.directory / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"postgres exited on port {self.port}:\n{tail}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"postgres did not answer on port {self.port}")
            time.sleep(0.02)  # polling a real server's readiness, with a deadline

    def _answers(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url(), connect_timeout=1):
                return True
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        # SIGINT is PostgreSQL's "fast" shutdown: it disconnects clients instead of waiting
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)

    def restart(self) -> None:
        self.stop()
        self.start()

    def execute(self, *statements: str, database: str = "postgres") -> None:
        """Run statements as the superuser, each in autocommit."""
        import psycopg

        with psycopg.connect(self.url(database=database), autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)  # type: ignore[arg-type]

    def query(self, sql: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        """Rows of one query, as the superuser."""
        import psycopg

        with psycopg.connect(self.url(database=database), autocommit=True) as connection:
            return connection.execute(sql).fetchall()  # type: ignore[arg-type]

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
