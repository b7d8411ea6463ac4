"""Query overhead of ``SqlAlchemyRunner`` per dialect, against the raw driver in the same run.

For SQLite, DuckDB and PostgreSQL, the same small query (50 rows of a 1,000-row table) runs
``--runs`` times through ``SqlAlchemyRunner.run_sql`` (awaited from an event loop: statement
check, thread hop, pooled connection, the dialect's read-only transaction and timeout,
streaming cursor, rollback) and through the raw DBAPI driver (one open connection, execute,
fetchall: the least work possible). Medians; overhead = runner - raw.

PostgreSQL: ``--postgres-url URL`` (a superuser's: the script makes a login that may only
read, as Threadline refuses superusers), or a throwaway server is started on a free loopback
port when Debian's ``postgresql`` is installed (as the ``postgres`` user when run as root);
skipped otherwise. Its identity case (``benchmarks/_identity.py``): the same query with and
without the asker's role and ``threadline.*`` settings, rounds alternating (goal: at most
+0.3 ms p50), and schema retrieval for a role that may read half of 2,000 tables against the
whole catalog, the same questions (goal: no worse than 1,702 tokens median and 96 % hits).

    .venv/bin/python benchmarks/query_overhead.py [--runs 300] [--role-questions 300]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import importlib.util
import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.database.limits import EngineLimits
from agent_core.database.pools import dispose_pools
from agent_core.database.runner import SqlAlchemyRunner
from benchmarks._identity import (
    LOGIN,
    ROLE,
    build_catalog,
    create_catalog,
    identity_timings,
    run_role_schema,
    setup_roles,
)

QUERY = "SELECT id, name, amount FROM items WHERE id <= 50 ORDER BY id"
ROWS = [(i, f"item {i}", i * 1.25) for i in range(1, 1001)]


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def raw_timings(connect: Callable[[], Any], runs: int) -> list[float]:
    connection = connect()
    samples = []
    try:
        for _ in range(runs):
            started = time.perf_counter()
            cursor = connection.cursor()
            cursor.execute(QUERY)
            cursor.fetchall()
            cursor.close()
            samples.append(time.perf_counter() - started)
    finally:
        connection.close()
    return samples


async def runner_timings(url: str, runs: int) -> list[float]:
    runner = SqlAlchemyRunner(url)
    await runner.run_sql(QUERY)  # warm: pool, dialect, first parse
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await runner.run_sql(QUERY)
        samples.append(time.perf_counter() - started)
    assert len(result.rows) == 50
    return samples


def sqlite_setup(folder: Path) -> tuple[str, Callable[[], Any]]:
    path = folder / "bench.db"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, amount REAL)")
        db.executemany("INSERT INTO items VALUES (?, ?, ?)", ROWS)
    return f"sqlite:///{path}", lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def duckdb_setup(folder: Path) -> tuple[str, Callable[[], Any]] | None:
    try:
        import duckdb
    except ImportError:
        return None
    path = folder / "bench.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR, amount DOUBLE)")
        db.executemany("INSERT INTO items VALUES (?, ?, ?)", ROWS)
    # the runner's configuration, so both opens of the file coexist in one process
    config = {**EngineLimits().duckdb_config(), "enable_external_access": False}
    return f"duckdb:///{path}", lambda: duckdb.connect(str(path), read_only=True, config=config)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def postgres_server() -> Iterator[str | None]:
    """A throwaway PostgreSQL on loopback; its superuser URL (None when not installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        yield None
        return
    binaries = Path(found[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="threadline-bench-pg-"))
    drop: dict[str, Any] = {}
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        drop = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        os.chown(folder, user.pw_uid, user.pw_gid)
    port = _free_port()
    subprocess.run(
        [
            str(binaries / "initdb"),
            "-D",
            str(folder / "data"),
            "-U",
            "bench",
            "--auth=trust",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        **drop,
    )
    server = subprocess.Popen(
        [
            str(binaries / "postgres"),
            "-D",
            str(folder / "data"),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(folder),
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **drop,
    )
    url = f"postgresql://bench@127.0.0.1:{port}/postgres"
    try:
        import psycopg

        deadline = time.monotonic() + 30
        while True:  # a real server's readiness, polled with a deadline
            try:
                psycopg.connect(url).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def postgres_setup(url: str) -> tuple[str, Callable[[], Any]] | None:
    """The items table, and the URL of a login that may only read it (and become the
    identity's role)."""
    try:
        import psycopg
    except ImportError:
        return None
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS items")
        setup_roles(db)
        db.execute("CREATE TABLE items (id integer PRIMARY KEY, name text, amount float8)")
        with db.cursor() as cursor:
            cursor.executemany("INSERT INTO items VALUES (%s, %s, %s)", ROWS)
        db.execute(f"GRANT SELECT ON items TO {LOGIN}, {ROLE}")
    login = _as_login(url)
    return login, lambda: psycopg.connect(login, autocommit=True)


def _as_login(url: str, database: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(username=LOGIN, password=None)
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def measure_identity(url: str, runs: int) -> dict[str, Any]:
    """PostgreSQL with and without the asker's role and settings, the same run."""
    without, with_identity = asyncio.run(identity_timings(url, QUERY, runs))
    dispose_pools()
    plain, asked = _median_ms(without), _median_ms(with_identity)
    added = round(asked - plain, 3)
    print(
        f"{'identity':10} runner {plain:.3f} ms · as a role with settings {asked:.3f} ms · "
        f"added {added:.3f} ms (goal <= 0.3)"
    )
    return {
        "postgresql_plain_ms": plain,
        "postgresql_identity_ms": asked,
        "postgresql_identity_added_ms": added,
    }


def measure_role_schema(url: str, kinds: int, questions: int) -> dict[str, Any]:
    """Schema retrieval for a role that may read half of the catalog."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP DATABASE IF EXISTS bench_schema")
        db.execute("CREATE DATABASE bench_schema")
    with psycopg.connect(make_database(url, "bench_schema"), autocommit=True) as db:
        create_catalog(db, build_catalog(kinds))
    figures = run_role_schema(_as_login(url, "bench_schema"), kinds, questions)
    dispose_pools()
    print(
        f"{'schema':10} {figures['role_tables']:,} tables for the role: tokens median "
        f"{figures['role_schema_tokens_median']:,} (all: {figures['all_schema_tokens_median']:,}) "
        f"· hits {figures['role_hit_rate']:.1%} (all: {figures['all_hit_rate']:.1%})"
    )
    return figures


def make_database(url: str, database: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


def measure(name: str, setup: tuple[str, Callable[[], Any]] | None, runs: int) -> dict[str, Any]:
    if setup is None:
        print(f"{name:10} skipped (driver or server not installed)")
        return {}
    url, connect = setup
    raw_timings(connect, 20)  # warm the driver
    raw = _median_ms(raw_timings(connect, runs))
    ours = _median_ms(asyncio.run(runner_timings(url, runs)))
    dispose_pools()
    overhead = round(ours - raw, 3)
    print(f"{name:10} raw driver {raw:.3f} ms · runner {ours:.3f} ms · overhead {overhead:.3f} ms")
    return {f"{name}_raw_ms": raw, f"{name}_runner_ms": ours, f"{name}_overhead_ms": overhead}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--postgres-url", default=None)
    parser.add_argument("--role-questions", type=int, default=300)
    parser.add_argument("--role-kinds", type=int, default=20, help="tables per branch (x 100)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"runs": args.runs, "rows": 50}
    with tempfile.TemporaryDirectory() as folder:
        figures |= measure("sqlite", sqlite_setup(Path(folder)), args.runs)
        figures |= measure("duckdb", duckdb_setup(Path(folder)), args.runs)
    server = (
        contextlib.nullcontext(args.postgres_url)
        if args.postgres_url or importlib.util.find_spec("psycopg") is None
        else postgres_server()
    )
    with server as url:
        setup = postgres_setup(url) if url else None
        figures |= measure("postgresql", setup, args.runs)
        if url and setup:
            figures |= measure_identity(setup[0], args.runs)
            figures |= measure_role_schema(url, args.role_kinds, args.role_questions)
    print(json.dumps({"benchmark": "query_overhead", **figures}, sort_keys=True))


if __name__ == "__main__":
    main()
