"""Escapes from PostgreSQL's read-only transaction, tried against a real server (issue 22
item 2), each asserted on the server's own state afterwards.

A writer role (``owner``) used SQL-text functions (``ts_stat``) to terminate another session;
a superuser with dblink installed committed a table and wrote a file with ``COPY ... TO``;
``pg_read_file`` returned a server file; ``pg_advisory_lock_shared`` outlived the rollback on
the pooled connection. Now: the function allow list refuses them, a superuser or a member of
the server roles is refused before any query runs, and every pooled connection is
``DISCARD ALL``-ed before it is reused.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agent_core.database.checks import check_database, log_report
from agent_core.database.privileges import PrivilegedUserError
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.tools.sql import SqlError
from tests.support.postgres_server import PostgresServer
from tests.support.postgres_shop import OWNER, OWNER_PASSWORD, Shop

pytestmark = pytest.mark.postgres

FILES_READER, SIGNALLER, PASSWORD = "files_reader", "signaller", "role-pw-Qe3"


@pytest.fixture(scope="module")
def escapes(postgres_server: PostgresServer, pg_shop: Shop) -> Shop:
    """The shop's server with dblink installed in a database of its own, owned by the
    writer role, and two roles that may reach beyond the database."""
    postgres_server.start()
    database = "escapes"
    if not postgres_server.query(f"SELECT 1 FROM pg_database WHERE datname = '{database}'"):
        postgres_server.execute(f"CREATE DATABASE {database} OWNER {OWNER}")
        postgres_server.execute("CREATE EXTENSION dblink", database=database)
        postgres_server.execute(
            f"CREATE ROLE {FILES_READER} LOGIN PASSWORD '{PASSWORD}' IN ROLE pg_read_server_files",
            f"CREATE ROLE {SIGNALLER} LOGIN PASSWORD '{PASSWORD}' IN ROLE pg_signal_backend",
            f"GRANT CONNECT ON DATABASE {database} TO {FILES_READER}, {SIGNALLER}",
        )
    return Shop(postgres_server, database)


@pytest.fixture
def other_session(escapes: Shop) -> Iterator[int]:
    """A session of the writer role that an escape would terminate; its pid."""
    with psycopg.connect(escapes.owner_url, autocommit=True) as connection:
        yield int(connection.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]


def _alive(server: PostgresServer, pid: int) -> bool:
    return bool(server.query(f"SELECT 1 FROM pg_stat_activity WHERE pid = {pid}"))


@pytest.mark.parametrize(
    "template",
    [
        "SELECT ts_stat('SELECT to_tsvector(pg_terminate_backend({pid})::text)')",
        "SELECT * FROM ts_stat('SELECT to_tsvector(pg_terminate_backend({pid})::text)')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT pg_terminate_backend({pid})::text::tsquery, "
        "''b''::tsquery')",
        "SELECT query_to_xml('SELECT pg_terminate_backend({pid})', true, true, '')",
        "SELECT pg_terminate_backend({pid})",
        "SELECT pg_catalog.pg_terminate_backend({pid})",
    ],
)
async def test_a_writer_cannot_terminate_another_session_through_sql_text(
    escapes: Shop, other_session: int, template: str
) -> None:
    with pytest.raises(SqlError) as refused:
        await SqlAlchemyRunner(escapes.owner_url).run_sql(template.format(pid=other_session))
    assert refused.value.reason == "read_only"
    assert _alive(escapes.server, other_session)


async def test_a_superuser_is_refused_before_any_query_runs(escapes: Shop) -> None:
    runner = SqlAlchemyRunner(escapes.server.url(database=escapes.database))
    marker = f"/tmp/threadline-escape-{uuid.uuid4().hex}"
    for sql in (
        "SELECT * FROM dblink('dbname=escapes', 'CREATE TABLE pwned (x int)') AS t(x text)",
        f"COPY (SELECT 1) TO '{marker}'",
    ):
        with pytest.raises(SqlError):
            await runner.run_sql(sql)
    with pytest.raises(PrivilegedUserError) as refused:  # even a harmless query
        await runner.run_sql("SELECT 1")
    assert "superuser" in str(refused.value) and "allow_privileged_user" in str(refused.value)
    assert (await check_database(runner)).refused
    assert escapes.server.query("SELECT to_regclass('pwned')", escapes.database) == [(None,)]
    assert not os.path.exists(marker)


async def test_a_sandboxed_superuser_still_cannot_use_dblink_copy_or_read_files(
    escapes: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    """With the loud opt-out, the allow list still stands between the model and the server."""
    caplog.set_level(logging.WARNING)
    runner = SqlAlchemyRunner(escapes.server.url(database=escapes.database), allow_privileged=True)
    assert (await runner.run_sql("SELECT 1 AS one")).rows == [[1]]
    marker = f"/tmp/threadline-escape-{uuid.uuid4().hex}"
    attacks = [
        "SELECT * FROM dblink('dbname=escapes user=postgres', 'CREATE TABLE pwned (x int)') "
        "AS t(x text)",
        "SELECT dblink_exec('dbname=escapes', 'CREATE TABLE pwned (x int)')",
        "SELECT ts_stat('SELECT to_tsvector(dblink_exec(''dbname=escapes'', ''CREATE TABLE "
        "pwned (x int)''))')",
        f"COPY (SELECT 1) TO '{marker}'",
        f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT pg_ls_dir('.')",
        f"SELECT lo_export(lo_from_bytea(0, 'x'), '{marker}')",
    ]
    for sql in attacks:
        with pytest.raises(SqlError) as refused:
            await runner.run_sql(sql)
        assert refused.value.reason == "read_only", sql
    assert escapes.server.query("SELECT to_regclass('pwned')", escapes.database) == [(None,)]
    assert not os.path.exists(marker)
    assert "allow_privileged_user = true" in caplog.text and "WARNING" in caplog.text


@pytest.mark.parametrize(
    ("role", "privilege"),
    [(FILES_READER, "pg_read_server_files"), (SIGNALLER, "pg_signal_backend")],
)
async def test_members_of_the_server_roles_are_refused_and_doctor_says_so(
    escapes: Shop, role: str, privilege: str, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SqlAlchemyRunner(escapes.server.url(role, PASSWORD, escapes.database))
    with pytest.raises(PrivilegedUserError) as refused:
        await runner.run_sql("SELECT 1")
    assert f"may become {privilege}" in str(refused.value)
    report = await check_database(runner)
    log_report(report)
    assert report.refused and "REFUSED" in report.lines()[0]
    assert any(r.levelno == logging.ERROR and "REFUSED" in r.getMessage() for r in caplog.records)
    assert PASSWORD not in caplog.text


async def test_a_session_advisory_lock_or_setting_never_reaches_the_next_query(
    escapes: Shop,
) -> None:
    """Whatever slipped past the checks (here, Threadline's own connection taking a session
    lock and a session setting) is gone before the connection is reused."""
    runner = SqlAlchemyRunner(escapes.owner_url, workers=1)

    def escape(connection: Any) -> int:
        connection.exec_driver_sql("SELECT pg_advisory_lock_shared(4242)")
        connection.exec_driver_sql("SELECT set_config('threadline.leak', 'yes', false)")
        return int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar())

    pid = await runner.with_connection(escape, timeout=10)
    locks = escapes.server.query(
        f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = {pid}"
    )
    assert locks == [(0,)]
    after = await runner.run_trusted(
        "SELECT pg_backend_pid(), current_setting('threadline.leak', true)"
    )
    assert after.rows[0][0] == pid  # the same pooled connection, reused
    assert after.rows[0][1] in (None, "")


async def test_the_advisory_lock_functions_are_refused_for_the_model(escapes: Shop) -> None:
    runner = SqlAlchemyRunner(escapes.owner_url)
    for sql in (
        "SELECT pg_advisory_lock_shared(1)",
        "SELECT pg_try_advisory_lock(1)",
        "SELECT pg_advisory_xact_lock(1)",
    ):
        with pytest.raises(SqlError) as refused:
            await runner.run_sql(sql)
        assert refused.value.reason == "read_only"
    assert escapes.server.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [
        (0,)
    ]


async def test_a_plain_reader_is_not_refused(escapes: Shop) -> None:
    runner = SqlAlchemyRunner(escapes.owner_url)
    assert (await runner.run_sql("SELECT 1 AS one")).rows == [[1]]
    assert OWNER_PASSWORD not in runner.masked_url
    await asyncio.sleep(0)
