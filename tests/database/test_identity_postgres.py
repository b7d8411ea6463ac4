"""Data follows the asker, on a real PostgreSQL 15 with roles, grants and row-level-security
policies (issue 24): each query runs in its read-only transaction as the asker's mapped
role with ``threadline.*`` settings, and nothing of it survives into the pooled
connection's next query."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.database.access import DataAccess
from agent_core.database.access_checks import check_access
from agent_core.database.identity import NoDataAccess
from agent_core.database.settings import DatabaseConfig
from agent_core.tools.sql import SqlError
from agent_core.users import User
from tests.support.postgres_identity import (
    BOT,
    QUOTED_ROLE,
    UNICODE_ROLE,
    Warehouse,
)
from tests.support.postgres_server import PostgresServer

pytestmark = pytest.mark.postgres

ANA = User(id="slack:T1:UANA", email="ana@example.com", group_memberships=["sales"])
BEN = User(id="slack:T1:UBEN", email="ben@example.com", group_memberships=["sales"])
CFO = User(id="slack:T1:UCFO", email="cfo@example.com", group_memberships=["finance", "sales"])
NOBODY = User(id="slack:T1:UX", email="x@example.com", group_memberships=["marketing"])
SLOW = "SELECT count(*) FROM generate_series(1, 10000000000) AS identity_marker"


def config(warehouse: Warehouse, **roles: str) -> DatabaseConfig:
    return DatabaseConfig(
        url=warehouse.url,
        roles=roles or {"finance": "finance_reader", "sales": "sales_reader"},
        unmapped="refuse",
    )


@pytest.fixture
def access(warehouse: Warehouse) -> Iterator[DataAccess]:
    yield DataAccess(config(warehouse))


async def rows(access: DataAccess, user: User, sql: str) -> list[list[object]]:
    return (await access.for_user(user).run_sql(sql)).rows


async def test_two_people_asking_the_same_question_each_see_their_own_rows(
    access: DataAccess,
) -> None:
    question = "SELECT id, amount FROM deals ORDER BY id"
    assert await rows(access, ANA, question) == [[1, 100], [2, 50]]
    assert await rows(access, BEN, question) == [[3, 7]]
    assert await rows(access, CFO, question) == [[1, 100], [2, 50], [3, 7]]  # finance first


async def test_grants_decide_which_tables_and_columns(access: DataAccess) -> None:
    with pytest.raises(SqlError) as refused:
        await rows(access, ANA, "SELECT pay FROM finance.salaries")
    assert "permission denied" in str(refused.value)
    with pytest.raises(SqlError):
        await rows(access, ANA, "SELECT card FROM customers")
    assert await rows(access, ANA, "SELECT name FROM customers") == [["Acme"]]
    assert await rows(access, CFO, "SELECT pay FROM finance.salaries") == [[98765]]


async def test_a_person_no_mapping_names_is_refused_and_nothing_runs(
    access: DataAccess, warehouse: Warehouse
) -> None:
    before = warehouse.query("SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database")
    with pytest.raises(NoDataAccess) as refused:
        await rows(access, NOBODY, "SELECT 1")
    assert str(refused.value).startswith("You have no data access here")
    with pytest.raises(NoDataAccess):
        await access.run_sql("SELECT 1")  # nobody in particular: the same rule
    after = warehouse.query("SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database")
    assert before == after or after[0][0] - before[0][0] <= 2  # only the two polls above


async def test_a_pooled_connection_carries_no_role_or_setting_into_the_next_query(
    warehouse: Warehouse,
) -> None:
    access = DataAccess(
        config(warehouse).model_copy(
            update={"allowed_functions": ["current_setting", "pg_backend_pid"]}
        )
    )
    runner = access.for_user(ANA)
    seen = await runner.run_sql(
        "SELECT current_user, current_setting('threadline.email'), pg_backend_pid() AS pid, "
        "current_setting('transaction_read_only')"
    )
    user, email, pid, read_only = seen.rows[0]
    assert (user, email, read_only) == ("sales_reader", "ana@example.com", "on")
    after = await access.default.run_trusted(
        "SELECT current_user, current_setting('threadline.email', true), "
        "current_setting('role'), pg_backend_pid()"
    )
    assert after.rows[0][0] == BOT and after.rows[0][1] in ("", None)
    assert after.rows[0][2] == "none"
    if after.rows[0][3] == pid:  # the same connection: nothing of Ana's query is left
        assert warehouse.query(f"SELECT usename FROM pg_stat_activity WHERE pid = {pid}") == [
            (BOT,)
        ]
    assert await rows(access, BEN, "SELECT count(*) FROM deals") == [[1]]


async def test_the_statement_timeout_and_stop_still_cancel_on_the_server(
    access: DataAccess, warehouse: Warehouse
) -> None:
    runner = access.for_user(ANA)
    started = time.perf_counter()
    with pytest.raises(SqlError) as slow:
        await runner.run_sql(SLOW, timeout=0.5)
    assert slow.value.reason == "timeout" and time.perf_counter() - started < 5
    stopped = asyncio.create_task(runner.run_sql(SLOW.replace("identity_", "stop_"), timeout=60))
    deadline = time.monotonic() + 20
    while not _running(warehouse, "threadline_query"):  # polled: a real server's state
        assert time.monotonic() < deadline and not stopped.done()
        await asyncio.sleep(0.02)
    stopped.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopped
    while _running(warehouse, "threadline_query"):
        assert time.monotonic() < deadline, _running(warehouse, "threadline_query")
        await asyncio.sleep(0.02)


def _running(warehouse: Warehouse, marker: str) -> list[tuple[object, ...]]:
    return warehouse.query(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'threadline' "
        f"AND state = 'active' AND query LIKE '%{marker}%'"
    )


@pytest.mark.parametrize("role", [QUOTED_ROLE, UNICODE_ROLE])
async def test_role_names_with_quotes_semicolons_or_unicode_are_values_not_sql(
    warehouse: Warehouse, role: str
) -> None:
    access = DataAccess(config(warehouse, sales=role))
    assert await rows(access, ANA, "SELECT count(*) FROM orders") == [[30]]
    assert warehouse.query("SELECT count(*) FROM deals") == [(3,)]  # nothing dropped
    with pytest.raises(SqlError):
        await rows(access, ANA, "SELECT count(*) FROM deals")  # the role has no grant


@pytest.mark.parametrize(
    ("role", "said"),
    [("ghost_role", "does not exist"), ("outsider_role", "cannot be taken")],
)
async def test_a_role_that_does_not_exist_or_cannot_be_set_is_said_plainly(
    warehouse: Warehouse, role: str, said: str
) -> None:
    access = DataAccess(config(warehouse, sales=role))
    with pytest.raises(SqlError) as failed:
        await rows(access, ANA, "SELECT 1")
    assert said in str(failed.value) and "[database.roles]" in str(failed.value)
    assert "Traceback" not in str(failed.value)
    report = await check_access(access)
    assert any(said in problem for problem in report.problems()), report.lines()


async def test_a_role_that_can_write_still_runs_read_only_and_is_warned(
    warehouse: Warehouse,
) -> None:
    access = DataAccess(
        DatabaseConfig(
            url=warehouse.url, roles={"sales": "writer_role"}, allowed_functions=["current_setting"]
        )
    )
    with pytest.raises(SqlError) as refused:
        await rows(access, ANA, "INSERT INTO orders VALUES (99, now(), 1)")
    assert refused.value.reason == "read_only"
    read_only = await rows(access, ANA, "SELECT current_setting('transaction_read_only')")
    assert read_only == [["on"]]
    assert warehouse.query("SELECT count(*) FROM orders") == [(30,)]
    report = await check_access(access)
    [role] = report.roles
    assert role.warning is not None and "can write" in role.warning


async def test_the_schema_each_role_sees_leaves_out_what_it_may_not_read(
    access: DataAccess,
) -> None:
    await access.source().refresh()
    sales = await access.schema(access.identity(ANA))
    finance = await access.schema(access.identity(CFO))
    assert sales is not None and finance is not None
    assert "finance.salaries" not in sales.tables and "finance.salaries" in finance.tables
    assert "card" not in sales.tables["customers"].ddl and "name" in sales.tables["customers"].ddl
    assert "card" in finance.tables["customers"].ddl
    assert await access.schema(access.identity(BEN)) is sales  # cached per role


async def test_a_person_whose_groups_change_asks_next_as_the_new_identity(
    access: DataAccess,
) -> None:
    ana = ANA.model_copy()
    assert await rows(access, ana, "SELECT count(*) FROM deals") == [[2]]
    promoted = ana.model_copy(update={"group_memberships": ["finance"]})
    assert await rows(access, promoted, "SELECT count(*) FROM deals") == [[3]]


async def test_training_notes_and_examples_naming_hidden_tables_are_left_out(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """The model only learns what the asker may see: a verified example reading a table the
    role may not read, or a note naming it, is not offered to that role."""
    training = tmp_path / "training"
    training.mkdir()
    (training / "pay.sql").write_text(
        "-- total payroll\nSELECT sum(pay) FROM finance.salaries;\n"
        "-- deals per person\nSELECT owner_email, count(*) FROM deals GROUP BY 1;\n"
    )
    (training / "notes.md").write_text(
        "The salaries table holds gross pay.\n\nDeals are counted when signed.\n"
    )
    access = DataAccess(config(warehouse).model_copy(update={"training_dir": training}))
    await access.source().refresh()
    sales = await access.schema(access.identity(ANA))
    finance = await access.schema(access.identity(CFO))
    assert sales is not None and finance is not None
    assert [e.question for e in sales.training.examples] == ["deals per person"]
    assert [n.text for n in sales.training.notes] == []
    assert len(finance.training.examples) == 2 and len(finance.training.notes) == 1
    assert "salaries" not in (await access.for_user(ANA).describe())


async def test_an_unreachable_database_is_said_as_before_under_identities(
    tmp_path: Path,
) -> None:
    """Bad input: the database down. Each asker hears it is unreachable (as without
    identities), and their schema says why; nothing hangs."""
    down = PostgresServer()  # never started
    try:
        access = DataAccess(
            DatabaseConfig(url=down.url(BOT, "x", "warehouse"), roles={"sales": "sales_reader"})
        )
        with pytest.raises(SqlError) as unavailable:
            await rows(access, ANA, "SELECT 1")
        assert unavailable.value.reason == "unavailable"
        index, error = await access.schema_for(ANA)
        assert index is None and error is not None and "unavailable" in error
    finally:
        down.remove()
