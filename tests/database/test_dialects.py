"""What each database would be sent: read-only setup, server timeouts, cancels; the URL rules
(default drivers, masked passwords, the extra a missing driver needs). The dialects without a
server in the tests (MySQL, SQL Server, Snowflake, BigQuery) are covered here."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy.engine import make_url

from agent_core.database.cancel import QueryHandle
from agent_core.database.dialects import rules_for
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.urls import DatabaseConfigError, mask_url, parse_url


def test_postgres_runs_read_only_transactions_with_a_server_timeout() -> None:
    rules = rules_for("postgresql")
    url = make_url("postgresql+psycopg://u@h/db")
    assert rules.connect_args(url, writable=False)["options"] == (
        "-c default_transaction_read_only=on"
    )
    [(sql, values)] = rules.begin_statements(timeout_ms=2500)
    assert sql == "SELECT set_config(%(k0)s, %(v0)s, true), set_config(%(k1)s, %(v1)s, true)"
    assert values == {
        "k0": "transaction_read_only",
        "v0": "on",
        "k1": "statement_timeout",
        "v1": "2500",
    }
    assert (rules.server_timeout, rules.cancel) == (True, "connection")


def test_mysql_starts_read_only_transactions_and_kills_queries_from_another_connection() -> None:
    rules = rules_for("mysql")
    url = make_url("mysql+pymysql://u@h/db")
    assert rules.connect_args(url, writable=False)["init_command"] == (
        "SET SESSION TRANSACTION READ ONLY"
    )
    assert rules.session_sql(timeout_ms=5000) == [
        "SET SESSION MAX_EXECUTION_TIME = 5000",
        "START TRANSACTION READ ONLY",
    ]
    assert rules.connection_id_sql() == "SELECT CONNECTION_ID()"
    assert rules.kill_sql(42) == "KILL QUERY 42"
    assert rules_for("mariadb").kill_sql("7") == "KILL QUERY 7"


def test_the_kill_statement_cannot_be_injected_through_a_connection_id() -> None:
    with pytest.raises(ValueError):
        rules_for("mysql").kill_sql("1; DROP TABLE t")


def test_mysql_kill_goes_through_a_second_connection() -> None:
    handle, sent = QueryHandle(), []
    handle.attach(object(), connection_id=42)
    handle.request("stop")
    handle.finish()  # the query ended: nothing is sent to a connection now serving others
    handle.cancel_on_server(rules_for("mysql"), sent.append)
    assert sent == []
    live = QueryHandle()
    live.attach(object(), connection_id=42)
    live.request("timeout")

    def kill(sql: str) -> None:  # the worker's query then ends, as KILL QUERY makes it
        sent.append(sql)
        threading.Thread(target=live.finish).start()

    live.cancel_on_server(rules_for("mysql"), kill)
    assert sent == ["KILL QUERY 42"]


def test_sql_server_snowflake_and_bigquery_bound_what_they_can() -> None:
    assert rules_for("mssql").session_sql(timeout_ms=3000) == ["SET LOCK_TIMEOUT 3000"]
    assert rules_for("mssql").cancel == "cursor"
    assert rules_for("snowflake").session_sql(timeout_ms=2500) == [
        "ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 3"
    ]
    assert rules_for("bigquery").session_sql(timeout_ms=1000) == []
    for backend in ("mssql", "snowflake", "bigquery"):
        assert "use a database user that may only read" in rules_for(backend).read_only_note


def test_duckdb_opens_files_read_only_without_external_access() -> None:
    args = rules_for("duckdb").connect_args(make_url("duckdb:///shop.duckdb"), writable=False)
    assert args["read_only"] is True and args["config"]["enable_external_access"] is False


def test_urls_get_the_extras_driver_and_never_show_their_password() -> None:
    assert parse_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert parse_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert parse_url("mysql://u@h/db").drivername == "mysql+pymysql"
    assert parse_url("postgresql+psycopg2://u@h/db").drivername == "postgresql+psycopg2"
    assert mask_url("postgresql://bo:s3cr3t@db:5432/x") == "postgresql://bo:***@db:5432/x"
    with pytest.raises(DatabaseConfigError) as bad:
        parse_url("not a url with pw s3cr3t")
    assert "expected e.g." in str(bad.value)


@pytest.mark.parametrize(
    ("url", "extra"),
    [
        ("mssql+pyodbc://u:s3cr3t@h/db?driver=x", "mssql"),
        ("snowflake://u:s3cr3t@account/db", "snowflake"),
        ("bigquery://project/dataset", "bigquery"),
    ],
)
def test_a_missing_driver_names_the_extra_to_install(url: str, extra: str) -> None:
    with pytest.raises(DatabaseConfigError) as missing:
        SqlAlchemyRunner(url)
    assert f"pip install 'threadline[{extra}]'" in str(missing.value)
    assert "s3cr3t" not in str(missing.value)
