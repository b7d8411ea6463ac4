"""deploy/demo_postgres.py, the compose file's ``demo-db-seed``: this month's demo shop in a
real PostgreSQL (a server of its own: the session's holds the tests' shop), with the same
tables and columns as the built-in SQLite demo, read through a role that can only read;
running it again replaces the data."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bots.demo.data import ensure_demo_database
from tests.deploy.files import DEPLOY, ROOT

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from tests.support.postgres_server import PostgresServer, postgres_bin  # noqa: E402

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL is not installed"),
]

READER_PASSWORD = "reader-pw-Dm4"


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    own = PostgresServer()
    own.start()
    yield own
    own.remove()


def seed(server: PostgresServer) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DEMO_DB_ADMIN_URL": server.url(),
        "DEMO_DB_READER_PASSWORD": READER_PASSWORD,
    }
    return subprocess.run(
        [sys.executable, str(DEPLOY / "demo_postgres.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def reader(server: PostgresServer) -> psycopg.Connection:
    return psycopg.connect(server.url("threadline_reader", READER_PASSWORD, "shop"))


def test_the_demo_shop_loads_and_is_only_readable(server: PostgresServer, tmp_path: Path) -> None:
    done = seed(server)
    assert done.returncode == 0, done.stderr
    demo = sqlite3.connect(ensure_demo_database(tmp_path))
    with reader(server) as shop:
        for table in ("customers", "products", "orders", "order_items"):
            expected = demo.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert shop.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == expected > 0
            columns = [row[1] for row in demo.execute(f"PRAGMA table_info({table})")]
            found = shop.execute(f"SELECT * FROM {table} LIMIT 0").description or []
            assert [c.name for c in found] == columns, f"{table} drifted from the demo"
        assert f"{table} {expected}" in done.stdout
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            shop.execute("INSERT INTO products VALUES (999, 'x', 'y', 1)")
    with reader(server) as shop, pytest.raises(psycopg.errors.InsufficientPrivilege):
        shop.execute("CREATE TABLE mine (n integer)")


def test_seeding_again_replaces_the_data(server: PostgresServer) -> None:
    assert seed(server).returncode == 0
    assert seed(server).returncode == 0
    with reader(server) as shop:
        ids = shop.execute("SELECT count(*), count(DISTINCT id) FROM orders").fetchone()
        assert ids is not None and ids[0] == ids[1] > 0


def test_without_its_settings_it_says_which() -> None:
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "demo_postgres.py")],
        env={k: v for k, v in os.environ.items() if not k.startswith("DEMO_DB_")},
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "DEMO_DB_ADMIN_URL" in done.stderr
