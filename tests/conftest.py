"""Fixtures shared by every test area."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_core.state.redis_client import connect_redis
from agent_core.state.testing import REDIS_SERVER, RedisServer, free_port, redis_available
from tests.support.calendar import MOMENTS, Moment, names_a_day
from tests.support.postgres_identity import Warehouse, create_warehouse
from tests.support.postgres_server import PostgresServer, postgres_bin
from tests.support.postgres_shop import Shop, create_shop

if TYPE_CHECKING:
    from redis.asyncio import Redis


# The calendar guard (tests.support.calendar): with --calendar, every test of a module that
# depends on the date runs again under each moment, time-machine moving this process's clock.


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--calendar",
        action="store_true",
        help="run the date-sensitive tests again under each of tests.support.calendar.MOMENTS",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.config.getoption("--calendar") and names_a_day(metafunc.definition.path):
        moments = [None, *MOMENTS]
        ids = ["today" if m is None else m.name for m in moments]
        metafunc.parametrize("calendar_moment", moments, ids=ids, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if names_a_day(item.path):
            item.add_marker(pytest.mark.calendar)


@pytest.fixture
def calendar_moment(request: pytest.FixtureRequest) -> Moment | None:
    """The moment this run of the test lives at (None: the real date)."""
    moment: Moment | None = getattr(request, "param", None)
    return moment


@pytest.fixture(autouse=True)
def _calendar(calendar_moment: Moment | None) -> Iterator[None]:
    """Moves this process's clock to the test's moment; a subprocess the test starts
    follows through ``tests.support.calendar.faked_env``."""
    if calendar_moment is None:
        yield
        return
    import time_machine

    with time_machine.travel(calendar_moment.local, tick=True):
        yield


@pytest.fixture
def unused_port() -> int:
    return free_port()


@pytest.fixture(autouse=True)
def _fresh_database_pools() -> Iterator[None]:
    """Database pools live per process; each test closes the ones it opened (their threads
    and connections), so thousands of tests do not pile them up."""
    yield
    from agent_core.database.pools import dispose_pools

    dispose_pools()


# A real redis-server for any test area (started once per session, loopback only).


def _require_redis() -> None:
    if not redis_available():
        pytest.skip(f"redis-server not installed (looked for {REDIS_SERVER})")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    _require_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.start()  # no-op unless a previous test left it stopped
    return redis_server.url


@pytest.fixture
def key_prefix() -> str:
    """A namespace of its own for each test, so tests share one server safely."""
    return f"test:{uuid.uuid4().hex[:10]}:"


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = connect_redis(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A server only this test uses: stop it, restart it, kill it."""
    _require_redis()
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


# A real PostgreSQL server (started once per session, loopback only) with the shop database.


def _require_postgres() -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    _require_postgres()
    server = PostgresServer()
    server.start()
    yield server
    server.remove()


@pytest.fixture(scope="module")
def warehouse(postgres_server: PostgresServer) -> Warehouse:
    """The people's warehouse (roles, grants, row-level security: tests.support
    .postgres_identity), on a running server."""
    postgres_server.start()
    return create_warehouse(postgres_server)


@pytest.fixture(scope="session")
def pg_shop(postgres_server: PostgresServer) -> Shop:
    """The shop database; tests only read it (each proves it unchanged after a write try)."""
    postgres_server.start()
    return create_shop(postgres_server)
