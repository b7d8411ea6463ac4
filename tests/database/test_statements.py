"""The statement check admits the functions it knows are safe and nothing else.

Regression for issue 22 item 2: the check denied functions by name, and PostgreSQL
functions that take SQL text as a string (``ts_stat('...')``, ``ts_rewrite(..., '...')``)
ran it inside the server, past the check. Now every function called by name must be on
the dialect's allow list (``agent_core.database.functions``), checked by the name it was
written with; the analytic SQL people really ask for still passes.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot.dialects.dialect import Dialect

from agent_core.database.functions import FunctionPolicy, allowed_functions
from agent_core.database.statements import check_statement
from agent_core.tools.sql import SqlError

POSTGRES_READS = [
    "SELECT date_trunc('month', placed_on) AS month, count(*), sum(total)::numeric(12, 2) "
    "FROM orders WHERE placed_on >= now() - interval '90 days' GROUP BY 1 ORDER BY 1",
    "SELECT c.name, coalesce(sum(o.total), 0) AS spent, rank() OVER (ORDER BY sum(o.total) DESC)"
    " FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.name",
    "WITH monthly AS (SELECT extract(year FROM placed_on) AS y, to_char(placed_on, 'Mon') AS m,"
    " total FROM orders) SELECT y, m, percentile_cont(0.5) WITHIN GROUP (ORDER BY total) "
    "FROM monthly GROUP BY y, m",
    "SELECT status, count(*) FILTER (WHERE total > 20), round(avg(total), 2), "
    "string_agg(DISTINCT status, ', ' ORDER BY status) FROM orders GROUP BY status",
    "SELECT lower(trim(name)), upper(left(country, 2)), length(name), substring(name FROM 1 "
    "FOR 3), position('a' IN name), split_part(name, ' ', 1), regexp_replace(name, '[0-9]', "
    "'', 'g') FROM customers WHERE name ILIKE '%acme%' OR name ~* '^glob'",
    "SELECT d::date, count(o.id) FROM generate_series(date '2024-01-01', date '2024-03-01', "
    "interval '1 day') AS d LEFT JOIN orders o ON o.placed_on = d::date GROUP BY 1",
    "SELECT id, total, lag(total) OVER w, lead(total) OVER w, total - first_value(total) OVER "
    "w, ntile(4) OVER w FROM orders WINDOW w AS (PARTITION BY customer_id ORDER BY placed_on)",
    "SELECT jsonb_build_object('id', id, 'total', total), to_jsonb(o) ->> 'status', "
    "json_agg(o) FROM orders o GROUP BY o.id",
    "SELECT greatest(total, 10), least(total, 50), nullif(status, 'paid'), CASE WHEN total "
    "> 30 THEN 'big' ELSE 'small' END, abs(total - 30), ceil(total), floor(total), "
    "power(total, 2), sqrt(total) FROM orders",
    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE "
    "table_schema = 'public' ORDER BY table_name, ordinal_position",
    "SELECT age(now(), placed_on), date_part('dow', placed_on), make_date(2024, 1, 1), "
    "justify_interval(now() - placed_on) FROM orders LIMIT 5",
    "SELECT array_agg(id ORDER BY id), array_length(array_agg(id), 1), unnest(ARRAY[1, 2]) "
    "FROM orders",
    "SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = "
    "o.customer_id AND c.country = ANY (ARRAY['DE', 'FR']))",
    "SELECT to_tsvector('english', name) @@ plainto_tsquery('english', 'acme') FROM customers",
    "SELECT pg_catalog.lower(name), format('%s (%s)', name, country), concat_ws('/', id, "
    "name), md5(name), pg_size_pretty(pg_total_relation_size('orders')) FROM customers",
    "SELECT 100.0 * count(*) / sum(count(*)) OVER () AS share, status FROM orders GROUP BY "
    "status HAVING count(*) > 1 ORDER BY share DESC NULLS LAST",
    "SELECT corr(id, total), stddev(total), var_samp(total), mode() WITHIN GROUP (ORDER BY "
    "status), bool_and(total > 0), every(total > 0) FROM orders",
    "SELECT id FROM orders UNION SELECT id FROM customers EXCEPT SELECT 3 ORDER BY 1",
    "VALUES (1, 'a'), (2, 'b')",
    "SELECT current_date, current_timestamp, localtime, current_user, to_number('12', '99'),"
    " to_date('2024-01-02', 'YYYY-MM-DD'), date_bin('15 minutes', now(), timestamp "
    "'2024-01-01')",
]

ATTACKS = [
    ("SELECT ts_stat('SELECT to_tsvector(pg_terminate_backend(1)::text)')", "ts_stat"),
    ("SELECT * FROM ts_stat('SELECT 1')", "ts_stat"),
    ("SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')", "ts_rewrite"),
    ("SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')", "query_to_xml"),
    ("SELECT cursor_to_xml('c', 1, true, true, '')", "cursor_to_xml"),
    ("SELECT database_to_xml(true, true, '')", "database_to_xml"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "pg_terminate_backend"),
    ("SELECT pg_cancel_backend(1)", "pg_cancel_backend"),
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("SELECT pg_catalog.pg_read_file('/etc/passwd')", "pg_catalog.pg_read_file"),
    ("SELECT \"pg_read_binary_file\"('/etc/passwd')", "pg_read_binary_file"),
    ("SELECT PG_LS_DIR('.')", "pg_ls_dir"),
    ("SELECT * FROM dblink('dbname=shop', 'SELECT 1') AS t(x int)", "dblink"),
    ("SELECT dblink_exec('dbname=shop', 'CREATE TABLE pwned (x int)')", "dblink_exec"),
    ("SELECT public.dblink_exec('dbname=shop', 'COMMIT')", "public.dblink_exec"),
    ("SELECT lo_import('/etc/passwd')", "lo_import"),
    ("SELECT pg_advisory_lock_shared(1)", "pg_advisory_lock_shared"),
    ("SELECT pg_try_advisory_lock(1)", "pg_try_advisory_lock"),
    ("SELECT set_config('role', 'postgres', false)", "set_config"),
    ("SELECT current_setting('data_directory')", "current_setting"),
    ("SELECT nextval('orders_id_seq')", "nextval"),
    ("SELECT pg_sleep(30)", "pg_sleep"),
    ("SELECT pg_notify('x', 'y')", "pg_notify"),
    ("SELECT count(*) FROM orders WHERE id = (SELECT length(pg_read_file('x')))", "pg_read_file"),
    ("WITH x AS (SELECT ts_stat('SELECT 1')) SELECT * FROM x", "ts_stat"),
    ("SELECT reporting.secret_definer()", "reporting.secret_definer"),
    ("SELECT public.upper(name) FROM customers", "public.upper"),
    ("SELECT xmlagg(query_to_xml('SELECT 1', true, true, ''))", "query_to_xml"),
]


@pytest.mark.parametrize("sql", POSTGRES_READS)
def test_the_analytic_sql_people_ask_for_passes(sql: str) -> None:
    check_statement(sql, "postgres")


@pytest.mark.parametrize(("sql", "name"), ATTACKS)
def test_functions_off_the_allow_list_are_refused_by_the_name_they_were_called(
    sql: str, name: str
) -> None:
    with pytest.raises(SqlError) as refused:
        check_statement(sql, "postgres")
    assert refused.value.reason == "read_only"
    assert f"refused the function {name}()" in str(refused.value)


@pytest.mark.parametrize(
    "sql",
    [
        "RESET ROLE",
        "SET ROLE postgres",
        "SET LOCAL ROLE postgres",
        "SET SESSION AUTHORIZATION postgres",
        "RESET ALL",
        "DISCARD ALL",
        "SELECT 1; RESET ROLE",
        "LISTEN x",
        "DO $$ BEGIN PERFORM 1; END $$",
        "PREPARE p AS SELECT 1",
        "CREATE FUNCTION f() RETURNS int SECURITY DEFINER LANGUAGE sql AS 'SELECT 1'",
        "ALTER FUNCTION f() SECURITY DEFINER",
        "EXPLAIN ANALYZE DELETE FROM orders",
        "COPY (SELECT 1) TO '/tmp/x'",
    ],
)
def test_the_model_cannot_change_who_it_runs_as(sql: str) -> None:
    """Issue 24, bad input: the model writing RESET ROLE, SET ROLE, set_config or SECURITY
    DEFINER tricks into its SQL is refused before the database sees it."""
    with pytest.raises(SqlError) as refused:
        check_statement(sql, "postgres")
    assert refused.value.reason in ("read_only", "invalid")


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        (
            "sqlite",
            "SELECT strftime('%Y-%m', d), printf('%.2f', sum(x)), iif(x > 0, 1, 0), "
            "json_extract(j, '$.a'), j ->> '$.b', group_concat(DISTINCT k), total(x) FROM t "
            "WHERE k LIKE 'a%' AND k GLOB 'a*' GROUP BY 1",
        ),
        ("sqlite", "SELECT * FROM pragma_table_info('t')"),
        (
            "duckdb",
            "SELECT date_trunc('month', d), median(x), quantile_cont(x, 0.9), "
            "list(k ORDER BY k), regexp_matches(k, 'a'), strftime(d, '%Y'), arg_max(k, x) "
            "FROM t GROUP BY ALL",
        ),
        ("duckdb", "SELECT * FROM range(10) r, unnest([1, 2, 3]) u"),
        (
            "mysql",
            "SELECT DATE_FORMAT(d, '%Y-%m'), IFNULL(SUM(x), 0), IF(x > 0, 'a', 'b'), "
            "GROUP_CONCAT(k SEPARATOR ','), TIMESTAMPDIFF(DAY, d, NOW()) FROM t GROUP BY 1, 3",
        ),
        (
            "tsql",
            "SELECT TOP 10 DATEPART(year, d), ISNULL(SUM(x), 0), FORMAT(d, 'yyyy-MM'), "
            "LEN(k), CHARINDEX('a', k) FROM t GROUP BY DATEPART(year, d), d, k",
        ),
        (
            "snowflake",
            "SELECT DATE_TRUNC('month', d), IFF(x > 0, 1, 0), NVL(x, 0), "
            "LISTAGG(k, ',') WITHIN GROUP (ORDER BY k), ZEROIFNULL(SUM(x)) FROM t GROUP BY 1, 2, 3",
        ),
        (
            "bigquery",
            "SELECT DATE_TRUNC(d, MONTH), COUNTIF(x > 0), SAFE_DIVIDE(SUM(x), COUNT(*)),"
            " FORMAT_DATE('%Y', d) FROM t GROUP BY 1, 4",
        ),
    ],
)
def test_each_dialect_admits_its_everyday_functions(dialect: str, sql: str) -> None:
    check_statement(sql, dialect)


@pytest.mark.parametrize(
    ("dialect", "sql", "name"),
    [
        ("duckdb", "SELECT * FROM query('SELECT 42')", "query"),
        ("duckdb", "SELECT * FROM query_table('t')", "query_table"),
        ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
        ("duckdb", "SELECT * FROM glob('/*')", "glob"),
        ("duckdb", "SELECT current_setting('temp_directory')", "current_setting"),
        ("sqlite", "SELECT load_extension('x')", "load_extension"),
        ("sqlite", "SELECT readfile('/etc/passwd')", "readfile"),
        ("mysql", "SELECT SLEEP(10)", "sleep"),
        ("mysql", "SELECT LOAD_FILE('/etc/passwd')", "load_file"),
        ("mysql", "SELECT GET_LOCK('x', 1)", "get_lock"),
        ("tsql", "SELECT * FROM OPENROWSET('SQLNCLI', 'x', 'SELECT 1')", "openrowset"),
        ("tsql", "SELECT * FROM OPENQUERY(srv, 'SELECT 1')", "openquery"),
        ("snowflake", "SELECT SYSTEM$WAIT(10)", "system$wait"),
        ("snowflake", "SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))", "result_scan"),
        ("bigquery", "SELECT * FROM EXTERNAL_QUERY('conn', 'SELECT 1')", "external_query"),
    ],
)
def test_each_dialect_refuses_functions_that_run_sql_text_or_reach_outside(
    dialect: str, sql: str, name: str
) -> None:
    with pytest.raises(SqlError) as refused:
        check_statement(sql, dialect)
    assert refused.value.reason == "read_only"
    assert name in str(refused.value).lower()


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("duckdb", "SELECT path FROM duckdb_databases"),
        ("duckdb", "SELECT * FROM duckdb_databases()"),
        ("duckdb", "SELECT * FROM pragma_database_list"),
        ("duckdb", "SELECT value FROM duckdb_settings()"),
        ("sqlite", "SELECT file FROM pragma_database_list"),
    ],
)
def test_the_engines_own_catalog_views_with_server_paths_are_refused(
    dialect: str, sql: str
) -> None:
    """Regression for issue 22 item 10: the model saw the server's file paths through
    DuckDB's ``duckdb_databases()``."""
    with pytest.raises(SqlError) as refused:
        check_statement(sql, dialect)
    assert refused.value.reason == "read_only"


def test_operators_add_their_own_functions_by_qualified_name() -> None:
    policy = FunctionPolicy.for_dialect("postgres", ["reporting.fiscal_quarter"])
    check_statement(
        "SELECT reporting.fiscal_quarter(placed_on) FROM orders", "postgres", functions=policy
    )
    with pytest.raises(SqlError):
        check_statement(
            "SELECT other.fiscal_quarter(placed_on) FROM orders", "postgres", functions=policy
        )


def test_the_sql_the_demo_and_its_evals_use_passes() -> None:
    evals = Path(__file__).parents[2] / "bots" / "eval_demo_shop.jsonl"
    lines = [line for line in evals.read_text().splitlines() if line.startswith("{")]
    queries = [json.loads(line).get("expected_sql") for line in lines]
    for sql in filter(None, queries):
        check_statement(sql, "sqlite")


# -- the property: any function called by a name off the allow list is refused -------------

DIALECTS = ["postgres", "mysql", "sqlite", "duckdb", "tsql", "snowflake", "bigquery"]


def _syntax_words(dialect: str) -> set[str]:
    """Names the dialect parses as syntax, not as a call by name (``CAST``, ``EXISTS``)."""
    parser = Dialect.get_or_raise(dialect).parser_class
    tokenizer = Dialect.get_or_raise(dialect).tokenizer_class
    words = {*parser.FUNCTION_PARSERS, *parser.NO_PAREN_FUNCTION_PARSERS, *tokenizer.KEYWORDS}
    return {word.lower() for word in words}


NAMES = st.text(alphabet=string.ascii_letters + "_", min_size=2, max_size=24).filter(
    lambda name: not name.startswith("_")
)
PLACES = [
    "SELECT {call}",
    "SELECT id FROM t WHERE x = {call}",
    "SELECT * FROM {call}",
    "SELECT count(*) FROM (SELECT {call} AS v) AS s",
    "WITH c AS (SELECT {call} AS v) SELECT v FROM c",
    "SELECT CASE WHEN {call} IS NULL THEN 1 END",
    "SELECT coalesce(x, {call}) FROM t",
]


@settings(max_examples=300, deadline=None)
@given(
    dialect=st.sampled_from(DIALECTS),
    name=NAMES,
    schema=st.one_of(st.none(), NAMES),
    place=st.sampled_from(PLACES),
    argument=st.sampled_from(["", "1", "'SELECT 1'", "x, 'y'"]),
)
def test_generated_calls_of_functions_off_the_allow_list_are_refused(
    dialect: str, name: str, schema: str | None, place: str, argument: str
) -> None:
    policy = FunctionPolicy.for_dialect(dialect)
    if name.lower() in allowed_functions(dialect) and (
        schema is None or schema.lower() in policy.schemas
    ):
        return  # on the list: not this property's case
    if name.lower() in _syntax_words(dialect):
        return  # syntax (CAST, EXISTS...), checked by what sqlglot makes of it
    call = f"{schema}.{name}({argument})" if schema else f"{name}({argument})"
    sql = place.format(call=call)
    try:
        sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        pass  # text that does not parse is refused as invalid below
    with pytest.raises(SqlError):
        check_statement(sql, dialect)
