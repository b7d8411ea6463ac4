"""``SqlAlchemyRunner`` on DuckDB: a read-only open without file or network access, refused
writes (by the parser and by DuckDB itself), interrupted at the deadline, introspected."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.database.introspection import introspect
from agent_core.database.limits import EngineLimits
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.tools.sql import SqlError

duckdb = pytest.importorskip("duckdb", reason="the duckdb extra is not installed")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR);"
            "COMMENT ON TABLE customers IS 'Who buys';"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES "
            "customers(id), total DECIMAL(10, 2));"
            "INSERT INTO customers VALUES (1, 'Acme'), (2, 'Globex');"
            "INSERT INTO orders SELECT i, 1 + i % 2, i * 1.5 FROM range(1, 101) t(i);"
        )
    return path


async def _count(runner: SqlAlchemyRunner) -> int:
    """Counted through the runner: DuckDB allows one configuration per file per process."""
    return int((await runner.run_sql("SELECT count(*) FROM orders")).rows[0][0])


async def test_reads_numbers_as_numbers(warehouse: Path) -> None:
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}")
    result = await runner.run_sql("SELECT sum(total) AS revenue FROM orders")
    assert result.rows == [[7575.0]] and runner.dialect == "DuckDB"


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM orders",
        "SELECT 1; DROP TABLE orders",
        "COPY orders TO '/tmp/threadline-stolen.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "ATTACH '/tmp/other.duckdb' AS other",
    ],
)
async def test_writes_and_file_access_are_refused(warehouse: Path, sql: str) -> None:
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}")
    with pytest.raises(SqlError) as refused:
        await runner.run_sql(sql)
    assert refused.value.reason == "read_only"
    assert await _count(runner) == 100


async def test_duckdb_itself_refuses_what_skips_the_parser(warehouse: Path) -> None:
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}")
    for sql in ("DELETE FROM orders", "COPY orders TO '/tmp/threadline-stolen.csv'"):
        with pytest.raises(SqlError) as refused:
            await runner.with_connection(lambda c, sql=sql: c.exec_driver_sql(sql), timeout=5)
        assert refused.value.reason == "read_only"
    assert await _count(runner) == 100
    assert not Path("/tmp/threadline-stolen.csv").exists()


async def test_a_query_past_its_timeout_is_interrupted(warehouse: Path) -> None:
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}")
    with pytest.raises(SqlError) as slow:
        await runner.run_sql("SELECT count(*) FROM range(100000000000) a", timeout=0.3)
    assert slow.value.reason == "timeout"
    assert (await runner.run_sql("SELECT 1")).rows == [[1]]  # the connection is usable again


async def test_introspection_reads_keys_and_comments(warehouse: Path) -> None:
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}")
    catalog = await runner.with_connection(introspect, timeout=30)
    ddl = {table.name: table.ddl for table in catalog.tables}
    assert ddl["customers"].startswith("CREATE TABLE customers (  -- Who buys")
    assert "customer_id INTEGER REFERENCES customers(id)" in ddl["orders"]
    assert [t.references for t in catalog.tables if t.name == "orders"] == [["customers"]]


async def test_every_connection_is_bounded_in_memory_and_threads(warehouse: Path) -> None:
    """Regression for issue 22 item 6: a DuckDB database URL ran with no ``memory_limit``
    (one query took 6.3 GB)."""
    limits = EngineLimits(memory_limit="64MB", threads=1)
    runner = SqlAlchemyRunner(f"duckdb:///{warehouse}", limits=limits)
    settings = await runner.run_trusted(
        "SELECT current_setting('memory_limit'), current_setting('threads'), "
        "current_setting('max_temp_directory_size')"
    )
    memory, threads, spill = settings.rows[0]
    assert memory.startswith("61.0 MiB") and int(threads) == 1 and spill.startswith("0")
    with pytest.raises(SqlError) as hungry:
        await runner.run_sql("SELECT length(list(range)) FROM range(40000000)")
    assert "memory" in str(hungry.value).lower()
