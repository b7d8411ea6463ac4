"""The statement check: exactly one read statement, parsed with a real SQL parser (sqlglot).

The database's own read-only mode is the guarantee (``agent_core.database.dialects``); this
check refuses early, with a clear message, what that mode would refuse, and what it would
not: any function not on the dialect's allow list (``agent_core.database.functions``), so
nothing that runs SQL text (``ts_stat('...')``), waits, reads files, takes locks or reaches
other sessions. It parses the whole text, so comments cannot hide a second statement, and
it walks the whole tree, so a write inside a CTE is found too.

Refused with ``reason="read_only"``: anything that is not a read (``INSERT``, ``COPY ... TO
PROGRAM``, ``SET`` / ``RESET ROLE``, ``CALL``...), ``SELECT ... INTO``, locking clauses
(``FOR UPDATE``), functions off the allow list, and the engine's own catalog views
(``duckdb_databases``: server paths). Refused with ``reason="invalid"``: text that does not
parse, empty text, and several read statements at once.

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

from agent_core.database.functions import FunctionPolicy, refused_function
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

READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
"""SQLite PRAGMAs that only describe the schema."""

HIDDEN_TABLES: dict[str | None, tuple[str, ...]] = {
    "duckdb": ("duckdb_", "pragma_"),
    "sqlite": ("pragma_",),
}
"""Catalog views of the engine itself (paths, settings), by name; SQLite's schema PRAGMAs
(``pragma_table_info``) stay readable."""

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


def _hidden_table(statement: exp.Expr, dialect: str | None) -> str | None:
    """A catalog view of the engine's own (DuckDB's ``duckdb_databases``, ``pragma_*``)
    that shows server paths and settings rather than data."""
    prefixes = HIDDEN_TABLES.get(dialect, ())
    for table in statement.find_all(exp.Table):
        name = table.name.lower()
        if prefixes and name.startswith(prefixes):
            if name.removeprefix("pragma_") not in READ_PRAGMAS:
                return name
    return None


def _check_pragma(statement: exp.Pragma, *, allow_writes: bool) -> None:
    inner = statement.this
    name = (inner.name if isinstance(inner, exp.Expr) else str(inner)).lower()
    if not allow_writes and name not in READ_PRAGMAS:
        raise _refused(f"PRAGMA {name}")


def _check_one(
    statement: exp.Expr, sql: str, policy: FunctionPolicy, *, allow_writes: bool
) -> None:
    if isinstance(statement, exp.Pragma):
        return _check_pragma(statement, allow_writes=allow_writes)
    refused = refused_function(statement, sql, policy)
    if refused is not None:
        raise SqlError(
            f"refused the function {refused}(): the database is read-only, and only functions "
            "that compute a value from their arguments are allowed (none that wait, read files, "
            "run SQL text, take locks or reach other sessions or servers)",
            reason="read_only",
        )
    hidden = _hidden_table(statement, policy.dialect)
    if hidden is not None:
        raise SqlError(
            f"refused {hidden}: it describes the database engine and its files, not the "
            "data; query the tables instead",
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


def check_statement(
    sql: str,
    dialect: str | None,
    *,
    allow_writes: bool = False,
    functions: FunctionPolicy | None = None,
) -> None:
    """Raise ``SqlError`` unless ``sql`` is exactly one statement this runner may run: one
    read statement (with ``allow_writes``, any one statement) calling only the functions
    ``functions`` admits (by default the dialect's allow list)."""
    policy = functions or FunctionPolicy.for_dialect(dialect)
    statements = _parse(sql, dialect)
    if not statements:
        raise SqlError("there is no SQL statement to run", reason="invalid")
    for statement in statements:
        _check_one(statement, sql, policy, allow_writes=allow_writes)
    if len(statements) > 1:
        raise SqlError(
            f"got {len(statements)} statements; run one statement at a time", reason="invalid"
        )
