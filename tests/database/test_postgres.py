"""``SqlAlchemyRunner`` on a real PostgreSQL server: read-only by construction, bounded,
cancelled on the server, honest when the server is away.

Writes are tried as ``owner``, a user that *can* write, so each refusal is Threadline's and
not the server's permissions; the table is counted afterwards by the superuser.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
import tracemalloc
from typing import Any

import pytest

from agent_core.database.checks import check_database, check_write_access, log_report
from agent_core.database.introspection import introspect
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.tools.sql import SqlError
from tests.support.postgres_server import PostgresServer
from tests.support.postgres_shop import OWNER_PASSWORD, READER_PASSWORD, Shop, create_shop

pytestmark = pytest.mark.postgres

ORDERS = 60
SLOW = "SELECT count(*) FROM generate_series(1, 10000000000) AS slow_marker"


async def test_a_read_returns_rows_in_a_read_only_transaction_with_a_server_timeout(
    pg_shop: Shop,
) -> None:
    runner = SqlAlchemyRunner(pg_shop.owner_url)
    # current_setting is not for the model (settings can name server paths): a trusted query
    result = await runner.run_trusted(
        "SELECT count(*) AS n, sum(total) AS revenue, current_setting('transaction_read_only') "
        "AS ro, current_setting('statement_timeout') AS limit_ FROM orders",
        timeout=3,
    )
    n, revenue, read_only, limit = result.rows[0]
    assert (n, read_only) == (ORDERS, "on")
    assert isinstance(revenue, float | int)  # numeric arrives as a number, not Decimal
    assert limit.endswith("ms") and 2000 < int(limit[:-2]) <= 3000


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("DELETE FROM orders", "DELETE"),
        ("UPDATE orders SET total = 0", "UPDATE"),
        ("INSERT INTO orders VALUES (999, 1, '2024-01-01', 1, 'paid')", "INSERT"),
        ("DROP TABLE orders", "DROP"),
        ("TRUNCATE orders", "TRUNCATE"),
        ("SELECT 1; DROP TABLE orders", "DROP"),
        ("/* harmless */ SELECT 1; -- comment\nDELETE FROM orders", "DELETE"),
        ("-- SELECT 1\nDELETE FROM orders", "DELETE"),
        ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM gone", "DELETE"),
        ("COPY orders TO PROGRAM 'touch /tmp/threadline-pwned'", "COPY"),
        ("SELECT pg_sleep(30)", "pg_sleep"),
        ("SELECT * FROM dblink('dbname=shop', 'DELETE FROM orders') AS t(x text)", "dblink"),
        ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
        ("SELECT lo_export(1, '/tmp/threadline-pwned')", "lo_export"),
        ("SELECT * INTO stolen FROM orders", "SELECT ... INTO"),
        ("SELECT * FROM orders FOR UPDATE", "FOR UPDATE"),
        ("SET default_transaction_read_only = off", "SET"),
    ],
)
async def test_writes_and_side_effects_are_refused_and_nothing_changes(
    pg_shop: Shop, sql: str, fragment: str
) -> None:
    with pytest.raises(SqlError) as refused:
        await SqlAlchemyRunner(pg_shop.owner_url).run_sql(sql)
    assert refused.value.reason == "read_only"
    assert "read-only" in str(refused.value) and fragment in str(refused.value)
    assert pg_shop.count() == ORDERS
    assert pg_shop.server.query("SELECT to_regclass('stolen')", "shop") == [(None,)]


async def test_the_transaction_itself_refuses_writes_that_skip_the_parser(pg_shop: Shop) -> None:
    """Read-only by construction: even SQL that never met the statement check cannot write."""
    runner = SqlAlchemyRunner(pg_shop.owner_url)
    for sql in ("DELETE FROM orders", "CREATE TABLE sneaky (x int)"):
        with pytest.raises(SqlError) as refused:
            await runner.with_connection(lambda c, sql=sql: c.exec_driver_sql(sql), timeout=5)
        assert refused.value.reason == "read_only"
        assert "read-only transaction" in str(refused.value)
    assert pg_shop.count() == ORDERS
    assert pg_shop.server.query("SELECT to_regclass('sneaky')", "shop") == [(None,)]


def _running(server: PostgresServer, marker: str = "") -> list[tuple[Any, ...]]:
    """Threadline's queries the server is running (with ``marker`` in their text)."""
    return server.query(
        "SELECT pid, query FROM pg_stat_activity WHERE application_name = 'threadline' "
        f"AND state = 'active' AND query LIKE '%{marker}%'",
        "shop",
    )


async def test_a_query_past_its_timeout_is_cancelled_on_the_server(pg_shop: Shop) -> None:
    started = time.perf_counter()
    with pytest.raises(SqlError) as slow:
        await SqlAlchemyRunner(pg_shop.reader_url).run_sql(SLOW, timeout=0.5)
    assert slow.value.reason == "timeout" and "0.5 s" in str(slow.value)
    assert time.perf_counter() - started < 5
    await _gone_from(pg_shop.server)  # not left burning on the server


async def _gone_from(server: PostgresServer) -> None:
    """Until the server runs none of Threadline's queries (the cancel is a message to the
    server, which acts on it within moments); polled with a deadline."""
    deadline = time.monotonic() + 10
    while _running(server):
        assert time.monotonic() < deadline, f"still running: {_running(server)}"
        await asyncio.sleep(0.02)


class _SignallingExecutor(concurrent.futures.ThreadPoolExecutor):
    """One worker thread that tells the loop when a job has really started running."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(max_workers=1)
        self.loop = loop
        self.job_started = asyncio.Event()

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        def signalled():  # type: ignore[no-untyped-def]
            self.loop.call_soon_threadsafe(self.job_started.set)
            return fn(*args, **kwargs)

        return super().submit(signalled)


async def test_stop_cancels_the_query_on_the_server(pg_shop: Shop) -> None:
    runner = SqlAlchemyRunner(pg_shop.reader_url, workers=1)
    with _SignallingExecutor(asyncio.get_running_loop()) as executor:
        runner.pool.executor = executor
        task = asyncio.create_task(runner.run_sql(SLOW.replace("slow_", "stopped_"), timeout=600))
        await executor.job_started.wait()
        deadline = time.monotonic() + 30
        # the statement the server runs is the cursor's FETCH (the marker is in its DECLARE)
        while not _running(pg_shop.server, "threadline_query"):  # a real server's state, polled
            assert not task.done(), f"the query ended before it was stopped: {task}"
            assert time.monotonic() < deadline, "the query never reached the server"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the single worker is free again only once the server gave up the query
        done = await asyncio.wait_for(runner.run_sql("SELECT 1", timeout=30), timeout=10)
    assert done.rows == [[1]]
    await _gone_from(pg_shop.server)


async def test_ten_million_rows_are_capped_counted_to_a_bound_in_bounded_memory(
    pg_shop: Shop,
) -> None:
    runner = SqlAlchemyRunner(pg_shop.reader_url, count_limit=200_000)
    tracemalloc.start()
    try:
        result = await runner.run_sql(
            "SELECT g, md5(g::text) FROM generate_series(1, 10000000) AS g",
            max_rows=100,
            timeout=60,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result.rows) == 100 and result.rows[0][0] == 1
    assert (result.total_rows, result.total_is_exact) == (200_100, False)
    assert result.row_note() == "showing 100 of more than 200,100 rows"
    assert peak < 30_000_000  # never the whole result: ~10 MB of batches at most


async def test_wrong_credentials_are_unavailable_and_the_password_is_never_shown(
    pg_shop: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = pg_shop.reader_url.replace(READER_PASSWORD, "Wrong-Secret-93")
    runner = SqlAlchemyRunner(url)
    with pytest.raises(SqlError) as refused:
        await runner.run_sql("SELECT 1")
    assert refused.value.reason == "unavailable"
    assert "password authentication failed" in str(refused.value)
    report = await check_database(runner)
    log_report(report)
    assert not report.reachable and "reader:***@" in report.url
    shown = [str(refused.value), *report.lines(), caplog.text, runner.masked_url]
    assert not any("Wrong-Secret-93" in text for text in shown)


async def test_the_start_up_check_says_loudly_when_the_user_can_write(
    pg_shop: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    owner = await check_write_access(SqlAlchemyRunner(pg_shop.owner_url))
    assert owner.status == "can_write"
    assert "public.customers" in owner.message and "CREATE in schema public" in owner.message
    reader = await check_write_access(SqlAlchemyRunner(pg_shop.reader_url))
    assert reader.status == "read_only"
    sandbox = SqlAlchemyRunner(pg_shop.server.url(database="shop"), allow_privileged=True)
    assert (await check_write_access(sandbox)).details == ["superuser"]

    report = await check_database(SqlAlchemyRunner(pg_shop.owner_url))
    log_report(report)
    [warning] = [r for r in caplog.records if "can write" in r.getMessage()]
    assert warning.levelno == logging.WARNING and "WARNING" in warning.getMessage()
    assert OWNER_PASSWORD not in caplog.text


async def test_reserved_words_and_non_ascii_names_introspect_and_query(pg_shop: Shop) -> None:
    runner = SqlAlchemyRunner(pg_shop.reader_url)
    catalog = await runner.with_connection(introspect, timeout=30)
    ddl = {table.name: table.ddl for table in catalog.tables}
    assert 'CREATE TABLE "order" (\n  "select" INTEGER,\n  "from" TEXT\n);' == ddl["order"]
    assert 'CREATE TABLE "café" (\n  "größe" TEXT,\n  "Prix" NUMERIC\n);' == ddl["café"]
    assert "-- People and companies who buy from the shop" in ddl["customers"]
    assert "customer_id INTEGER REFERENCES customers(id)" in ddl["orders"]
    assert "id INTEGER PRIMARY KEY" in ddl["orders"]
    result = await runner.run_sql('SELECT "größe", "Prix" FROM "café" JOIN "order" ON true')
    assert result.records() == [{"größe": "groß", "Prix": 3.5}]


async def test_an_unreachable_database_recovers_by_itself(tmp_path_factory: Any) -> None:
    """Down at start, up, down mid-run, up again: each question hears the truth, and the
    runner reconnects without a restart."""
    server = PostgresServer()
    try:
        runner = SqlAlchemyRunner(server.url())  # the server was never started
        with pytest.raises(SqlError) as down:
            await runner.run_sql("SELECT 1")
        assert down.value.reason == "unavailable" and "Connection refused" in str(down.value)

        await asyncio.to_thread(server.start)
        shop = await asyncio.to_thread(create_shop, server)
        runner = SqlAlchemyRunner(shop.reader_url)
        assert (await runner.run_sql("SELECT count(*) FROM orders")).rows == [[ORDERS]]

        await asyncio.to_thread(server.stop)  # mid-run: pooled connections are now dead
        with pytest.raises(SqlError) as gone:
            await runner.run_sql("SELECT count(*) FROM orders")
        assert gone.value.reason == "unavailable"

        await asyncio.to_thread(server.start)
        assert (await runner.run_sql("SELECT count(*) FROM orders")).rows == [[ORDERS]]
    finally:
        await asyncio.to_thread(server.remove)
