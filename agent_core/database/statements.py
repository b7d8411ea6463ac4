"""The statement check: exactly one read statement, parsed with a real SQL parser (sqlglot).

The database's own read-only mode is the guarantee (``agent_core.database.dialects``); this
check refuses early, with a clear message, what that mode would refuse, and what it would
not: functions that stall the server or reach outside it (``pg_sleep``, ``dblink``,
``pg_read_file``, ``lo_export``...). It parses the whole text, so comments cannot hide a
second statement, and it walks the whole tree, so a write inside a CTE is found too.

Refused with ``reason="read_only"``: anything that is not a read (``INSERT``, ``COPY ... TO
PROGRAM``, ``SET``, ``CALL``...), ``SELECT ... INTO``, locking clauses (``FOR UPDATE``) and
denied functions. Refused with ``reason="invalid"``: text that does not parse, empty text,
and several read statements at once.

>>> check_statement("SELECT 1 -- fine", "postgres")
>>> check_statement("SELECT 1; DROP TABLE t", "postgres")
Traceback (most recent call last):
...
agent_core.tools.sql.SqlError: refused DROP: the database is read-only; only one read \
statement (SELECT) is allowed
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from agent_core.tools.sql import SqlError

READ_ROOTS: tuple[type[exp.Expression], ...] = (
    exp.Select,
    exp.SetOperation,
    exp.Values,
    exp.Show,
    exp.Describe,
    exp.Subquery,
)
"""What a statement may be at its top."""

WRITES: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Copy,
    exp.Command,
    exp.Set,
    exp.Attach,
    exp.Detach,
    exp.Use,
    exp.Grant,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.LoadData,
    exp.Into,
    exp.Lock,
)
"""What may appear nowhere in an admitted statement (``Into``: ``SELECT ... INTO``;
``Lock``: ``FOR UPDATE`` / ``FOR SHARE``)."""

DENIED_FUNCTIONS = frozenset(
    """pg_sleep pg_sleep_for pg_sleep_until dblink dblink_exec dblink_open dblink_fetch
    dblink_send_query dblink_connect dblink_connect_u pg_read_file pg_read_binary_file
    pg_ls_dir pg_stat_file pg_file_write pg_logdir_ls lo_import lo_export lo_unlink lo_create
    lo_from_bytea lo_put lo_open lo_write pg_terminate_backend pg_cancel_backend
    pg_reload_conf pg_rotate_logfile pg_switch_wal pg_create_restore_point pg_promote
    pg_notify pg_logical_emit_message set_config nextval setval pg_advisory_lock
    pg_advisory_xact_lock pg_try_advisory_lock query_to_xml query_to_xml_and_xmlschema
    query_to_xmlschema cursor_to_xml cursor_to_xmlschema sleep benchmark load_file get_lock
    release_lock sys_exec sys_eval load_extension readfile writefile edit fts3_tokenizer
    openrowset opendatasource openquery read_csv read_csv_auto read_parquet read_json
    read_json_auto read_text read_blob parquet_scan glob""".split()
)
"""Functions that wait, touch files or other servers, or change state: never admitted."""

DENIED_PREFIXES = ("pg_sleep", "dblink", "lo_", "system$", "xp_", "sp_", "pg_read_")

READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
"""SQLite PRAGMAs that only describe the schema."""

READ_ONLY_NOTE = "the database is read-only; only one read statement (SELECT) is allowed"


def _refused(what: str) -> SqlError:
    return SqlError(f"refused {what}: {READ_ONLY_NOTE}", reason="read_only")


def _parse(sql: str, dialect: str | None) -> list[exp.Expr]:
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except (ParseError, TokenError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise SqlError(f"syntax error: {first}", reason="invalid") from None
    # a comment after the last ``;`` parses as an empty statement of its own
    return [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]


def _kind(statement: exp.Expr) -> str:
    if isinstance(statement, exp.Command):
        return str(statement.this).upper()
    if isinstance(statement, exp.Into):
        return "SELECT ... INTO"
    if isinstance(statement, exp.Lock):
        return "locking clauses (FOR UPDATE / FOR SHARE)"
    return statement.key.upper().replace("TRUNCATETABLE", "TRUNCATE")


def function_name(node: exp.Func) -> str:
    """The lower-case name a function was called by (``pg_sleep``, ``read_csv``)."""
    name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
    return name.lower()


def _denied_function(statement: exp.Expr) -> str | None:
    for node in statement.find_all(exp.Func):
        name = function_name(node)
        if name in DENIED_FUNCTIONS or name.startswith(DENIED_PREFIXES):
            return name
    return None


def _check_pragma(statement: exp.Pragma, *, allow_writes: bool) -> None:
    inner = statement.this
    name = (inner.name if isinstance(inner, exp.Expr) else str(inner)).lower()
    if not allow_writes and name not in READ_PRAGMAS:
        raise _refused(f"PRAGMA {name}")


def _check_one(statement: exp.Expr, *, allow_writes: bool) -> None:
    if isinstance(statement, exp.Pragma):
        return _check_pragma(statement, allow_writes=allow_writes)
    denied = _denied_function(statement)
    if denied is not None:
        raise SqlError(
            f"refused the function {denied}(): the database is read-only, and functions that "
            "wait, read files or reach other servers are not allowed",
            reason="read_only",
        )
    if isinstance(statement, exp.Attach | exp.Detach):
        raise _refused("ATTACH/DETACH")
    if allow_writes:
        return None
    if not isinstance(statement, READ_ROOTS):
        raise _refused(_kind(statement))
    write = next(statement.find_all(*WRITES), None)
    if write is not None:
        raise _refused(_kind(write))
    return None


def check_statement(sql: str, dialect: str | None, *, allow_writes: bool = False) -> None:
    """Raise ``SqlError`` unless ``sql`` is exactly one statement this runner may run
    (one read statement; with ``allow_writes``, one statement without denied functions)."""
    statements = _parse(sql, dialect)
    if not statements:
        raise SqlError("there is no SQL statement to run", reason="invalid")
    for statement in statements:
        _check_one(statement, allow_writes=allow_writes)
    if len(statements) > 1:
        raise SqlError(
            f"got {len(statements)} statements; run one statement at a time", reason="invalid"
        )
