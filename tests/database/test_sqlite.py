"""``SqlAlchemyRunner`` on SQLite (it replaced ``SqliteRunner``, keeping every behaviour): off
the event loop, read-only by default, capped, timed out, cancellable."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from agent_core.database.functions import FunctionPolicy
from agent_core.database.limits import HARD_STOP_GRACE
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.sqlite_guard import SqliteGuard
from agent_core.tools.sql import SqlError

FOREVER = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"


async def test_select_returns_columns_rows_and_exact_total(shop_db: Path) -> None:
    result = await SqlAlchemyRunner.sqlite(shop_db).run_sql(
        "SELECT region, SUM(revenue) AS revenue FROM sales GROUP BY region ORDER BY region"
    )
    assert result.columns == ["region", "revenue"]
    assert [row[0] for row in result.rows] == ["North", "South", "West"]
    assert (result.total_rows, result.total_is_exact, result.truncated) == (3, True, False)
    assert result.row_note() == "3 rows"
    assert result.elapsed_ms > 0


async def test_row_cap_counts_the_rest_without_keeping_it(shop_db: Path) -> None:
    result = await SqlAlchemyRunner.sqlite(shop_db).run_sql("SELECT * FROM sales", max_rows=10)
    assert len(result.rows) == 10
    assert (result.total_rows, result.total_is_exact, result.truncated) == (72, True, True)
    assert result.row_note() == "showing 10 of 72 rows"


async def test_counting_stops_at_the_count_limit(shop_db: Path) -> None:
    runner = SqlAlchemyRunner.sqlite(shop_db, count_limit=5)
    result = await runner.run_sql("SELECT * FROM sales", max_rows=10)
    assert (len(result.rows), result.total_rows, result.total_is_exact) == (10, 15, False)
    assert result.row_note() == "showing 10 of more than 15 rows"


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO sales VALUES ('2030-01', 'East', 1, 1)",
        "UPDATE sales SET revenue = 0",
        "DELETE FROM sales",
        "DROP TABLE sales",
        "CREATE TABLE evil (x)",
        "CREATE TEMP TABLE scratch (x)",
        "ALTER TABLE sales ADD COLUMN x",
        "ATTACH DATABASE ':memory:' AS other",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA writable_schema = ON",
        "SELECT load_extension('evil')",
    ],
)
async def test_read_only_refuses_anything_that_writes(shop_db: Path, sql: str) -> None:
    with pytest.raises(SqlError) as refused:
        await SqlAlchemyRunner.sqlite(shop_db).run_sql(sql)
    assert refused.value.reason == "read_only"
    assert "read-only" in str(refused.value)
    db = sqlite3.connect(shop_db)
    assert db.execute("SELECT count(*) FROM sales").fetchone() == (72,)
    db.close()


async def test_schema_introspection_is_allowed(shop_db: Path) -> None:
    runner = SqlAlchemyRunner.sqlite(shop_db)
    info = await runner.run_sql("PRAGMA table_info(sales)")
    assert [row[1] for row in info.rows] == ["month", "region", "revenue", "share_pct"]
    schema = await runner.describe()
    assert "CREATE TABLE sales" in schema and "CREATE TABLE files" in schema


async def test_writes_when_allowed_are_committed(shop_db: Path) -> None:
    runner = SqlAlchemyRunner.sqlite(shop_db, allow_writes=True)
    result = await runner.run_sql("DELETE FROM sales WHERE region = 'West'")
    assert (result.columns, result.rows_affected) == ([], 24)
    check = await SqlAlchemyRunner.sqlite(shop_db).run_sql("SELECT count(*) FROM sales")
    assert check.rows == [[48]]
    with pytest.raises(SqlError) as refused:
        await runner.run_sql("ATTACH DATABASE ':memory:' AS other")
    assert refused.value.reason == "read_only"


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELEC 1", "syntax error"),
        ("SELECT nope FROM sales", "no such column"),
        ("SELECT 1; SELECT 2", "one statement"),
    ],
)
async def test_bad_sql_is_reported_as_invalid(shop_db: Path, sql: str, fragment: str) -> None:
    with pytest.raises(SqlError) as invalid:
        await SqlAlchemyRunner.sqlite(shop_db).run_sql(sql)
    assert invalid.value.reason == "invalid"
    assert fragment in str(invalid.value)


async def test_missing_database_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SqlError) as missing:
        await SqlAlchemyRunner.sqlite(tmp_path / "nope.db").run_sql("SELECT 1")
    assert missing.value.reason == "unavailable"
    assert not (tmp_path / "nope.db").exists()


async def test_a_file_that_is_not_a_database_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not SQLite")
    with pytest.raises(SqlError) as broken:
        await SqlAlchemyRunner.sqlite(path).run_sql("SELECT 1 FROM t")
    assert broken.value.reason == "unavailable"


async def test_statement_timeout_stops_a_runaway_query(shop_db: Path) -> None:
    with pytest.raises(SqlError) as slow:
        await SqlAlchemyRunner.sqlite(shop_db).run_sql(FOREVER, timeout=0.05)
    assert slow.value.reason == "timeout"
    assert "0.05 s" in str(slow.value)


async def test_timeout_while_counting_keeps_the_rows(shop_db: Path) -> None:
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    result = await SqlAlchemyRunner.sqlite(shop_db).run_sql(endless, max_rows=3, timeout=0.05)
    assert result.rows == [[1], [2], [3]]
    assert result.total_is_exact is False and result.total_rows > 3
    assert result.row_note().startswith("showing 3 of more than")


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


async def test_cancelling_the_caller_interrupts_the_query(shop_db: Path) -> None:
    """Stop must not leave a query burning a worker thread until its timeout."""
    loop = asyncio.get_running_loop()
    runner = SqlAlchemyRunner.sqlite(shop_db, workers=1)
    with _SignallingExecutor(loop) as executor:
        runner.pool.executor = executor
        task = asyncio.create_task(runner.run_sql(FOREVER, timeout=60))
        await executor.job_started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the single worker is free again only once the query was interrupted
        result = await asyncio.wait_for(runner.run_sql("SELECT 1", timeout=60), timeout=5)
        assert result.rows == [[1]]


async def test_a_query_queued_when_the_pool_closes_is_unavailable_not_cancelled(
    shop_db: Path,
) -> None:
    """Shutting the pool down drops queued jobs. A caller waiting on one hears "the pool is
    closed" (an ``SqlError``), not a ``CancelledError`` it never asked for: the start-up
    check's thread died of that while a console closed (``threadline-schema``)."""
    loop = asyncio.get_running_loop()
    runner = SqlAlchemyRunner.sqlite(shop_db, workers=1)
    with _SignallingExecutor(loop) as executor:
        runner.pool.executor = executor
        busy = asyncio.create_task(runner.run_sql(FOREVER, timeout=60))
        await executor.job_started.wait()
        queued = asyncio.create_task(runner.run_trusted("SELECT 1", timeout=60))
        await asyncio.sleep(0.05)  # queued behind the busy worker
        closing = loop.run_in_executor(None, runner.pool.dispose)
        with pytest.raises(SqlError) as closed:
            await asyncio.wait_for(queued, timeout=10)
        assert closed.value.reason == "unavailable" and "closed" in str(closed.value)
        busy.cancel()  # Stop: interrupts the running query, so the pool finishes closing
        with pytest.raises(asyncio.CancelledError):
            await busy
        await asyncio.wait_for(closing, timeout=10)


async def test_blobs_become_placeholders_in_records(shop_db: Path) -> None:
    result = await SqlAlchemyRunner.sqlite(shop_db).run_sql("SELECT name, body FROM files")
    assert result.records() == [{"name": "a.bin", "body": "<4 bytes>"}]


async def test_queries_run_off_the_event_loop(shop_db: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    with pytest.raises(SqlError):
        await SqlAlchemyRunner.sqlite(shop_db).run_sql(FOREVER, timeout=0.1)
    ticking.cancel()
    assert ticks > 10


async def test_one_long_function_call_is_bounded_in_memory_and_wall_clock(
    shop_db: Path,
) -> None:
    """Regression for issue 22 item 6: ``printf('%.*c', 900000000, 'x')`` took 930 MB and ran
    7.9 s past a 3 s timeout (the progress handler cannot stop one function call). The
    length limit keeps the value from being built; the caller hears "stopped" on time."""
    runner = SqlAlchemyRunner.sqlite(shop_db)
    started = time.perf_counter()
    with pytest.raises(SqlError) as slow:
        await runner.run_sql("SELECT length(printf('%.*c', 900000000, 'x'))", timeout=0.5)
    assert slow.value.reason == "timeout"
    assert time.perf_counter() - started < 0.5 + HARD_STOP_GRACE + 1.0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT length(zeroblob(900000000))",
        "SELECT length(randomblob(900000000))",
        "SELECT length(replace(hex(zeroblob(8000000)), '0', 'xx'))",
    ],
)
async def test_no_value_may_grow_past_the_length_limit(shop_db: Path, sql: str) -> None:
    with pytest.raises(SqlError) as refused:
        await SqlAlchemyRunner.sqlite(shop_db).run_sql(sql)
    assert "too big" in str(refused.value)


def test_the_engine_itself_refuses_functions_off_the_allow_list() -> None:
    """Defense in depth: SQL that the parser and SQLite read differently still calls only
    allowed functions, because SQLite's authorizer checks each call too."""
    guard = SqliteGuard(
        allow_writes=False,
        deadline=time.perf_counter() + 5,
        cancel=threading.Event(),
        functions=FunctionPolicy.for_dialect("sqlite").allowed,
    )
    db = sqlite3.connect(":memory:")
    db.create_function("sneaky", 0, lambda: 1)
    guard.install(db)
    assert db.execute("SELECT upper('a'), 'a' LIKE 'a', json_extract('{}', '$')").fetchone()
    with pytest.raises(sqlite3.DatabaseError):
        db.execute("SELECT sneaky()")
    assert guard.refused == "the function sneaky()"
    db.close()
