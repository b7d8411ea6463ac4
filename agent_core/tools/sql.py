"""SQL for the agent: the ``SqlRunner`` interface and the ``run_sql`` tool.

``agent_core.database.SqlAlchemyRunner`` is the runner that ships (any SQLAlchemy URL).

``RunSqlTool`` gives the LLM a compact CSV of the first rows and people the full table
(``DataFrameComponent``) plus a text table; it remembers question -> SQL pairs that worked,
so similar questions later can reuse them (``search_saved_correct_tool_uses``). Each query
that ran is a ``Source`` of the answer (``sql_source``: the SQL, the tables it read, its row
count), which the turn cites with the answer.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_core.components import DataFrameComponent, SimpleTextComponent, Source, UiComponent
from agent_core.context import ToolContext
from agent_core.errors import PermissionDeniedError, ToolExecutionError
from agent_core.tool_contract import Tool, ToolResult
from agent_core.tools.tabular import bounded_csv, cell_value, text_table
from agent_core.users import User

logger = logging.getLogger(__name__)

SqlErrorReason = Literal["invalid", "read_only", "timeout", "unavailable"]


class SqlError(ToolExecutionError):
    """A query that could not run; ``reason`` says why (bad SQL, write refused, timeout...)."""

    def __init__(self, message: str, *, reason: SqlErrorReason) -> None:
        super().__init__(message)
        self.reason: SqlErrorReason = reason


class SqlResult(BaseModel):
    """What a query returned: the first rows, and how many rows there were in all.

    ``total_rows`` is exact when ``total_is_exact``; otherwise it is a lower bound (counting
    stopped at the runner's limit or deadline). Statements without a result set report
    ``rows_affected`` instead.

    >>> r = SqlResult(columns=["n"], rows=[[1], [2]], total_rows=40)
    >>> (r.truncated, r.row_note())
    (True, 'showing 2 of 40 rows')
    """

    columns: list[str]
    rows: list[list[Any]]
    total_rows: int
    total_is_exact: bool = True
    rows_affected: int | None = None
    elapsed_ms: float = 0.0

    @property
    def truncated(self) -> bool:
        return len(self.rows) < self.total_rows or not self.total_is_exact

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, map(cell_value, row), strict=True)) for row in self.rows]

    def total_text(self) -> str:
        """``1,234`` or ``more than 5,000``."""
        total = f"{self.total_rows:,}"
        return total if self.total_is_exact else f"more than {total}"

    def row_note(self) -> str:
        """``3 rows``, ``showing 100 of 1,234 rows`` or ``showing 100 of more than 5,000 rows``."""
        if not self.truncated:
            return f"{self.total_rows:,} row{'' if self.total_rows == 1 else 's'}"
        return f"showing {len(self.rows):,} of {self.total_text()} rows"


class SqlRunner(ABC):
    """Runs one SQL statement for a tool, off the event loop, within ``timeout`` seconds.

    Raise ``SqlError`` for anything the user or the LLM should hear about.

    >>> class Fixed(SqlRunner):
    ...     async def run_sql(self, sql, *, max_rows=100, timeout=10.0):
    ...         return SqlResult(columns=["one"], rows=[[1]], total_rows=1)
    """

    dialect: str = "SQL"
    parser_dialect: str | None = None
    """The dialect's name for sqlglot (``"postgres"``...), to read the tables a query names."""

    @abstractmethod
    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        """The first ``max_rows`` rows of ``sql`` and the total row count."""

    async def describe(self) -> str:
        """The schema as text for prompts (``CREATE`` statements); empty when unknown."""
        return ""

    def for_user(self, user: User) -> SqlRunner:
        """The runner of ``user``'s queries: this one, unless the runner maps people to
        database identities (``agent_core.database.access``), which may refuse with
        ``NoDataAccess`` (a ``PermissionDeniedError``)."""
        return self

    @property
    def identity_label(self) -> str | None:
        """Whose data identity this runner's queries run as, for audit records (None: the
        runner's own)."""
        return None


class RunSqlArgs(BaseModel):
    sql: str = Field(min_length=1, description="Exactly one SQL statement to run.")


class RunSqlTool(Tool[RunSqlArgs]):
    """The ``run_sql`` tool over any ``SqlRunner``.

    People get a table of the first ``max_rows`` rows (with "showing N of M"); the LLM gets
    a CSV of at most ``llm_max_chars`` characters. Successful queries are saved to the
    agent's memory against the user's question.

    >>> from agent_core.database import SqlAlchemyRunner
    >>> tool = RunSqlTool(SqlAlchemyRunner("sqlite:///shop.db"))
    >>> tool.get_schema().name
    'run_sql'
    """

    name = "run_sql"

    def __init__(
        self,
        runner: SqlRunner,
        *,
        max_rows: int = 100,
        timeout: float = 10.0,
        llm_max_chars: int = 4000,
        save_to_memory: bool = True,
    ) -> None:
        self.runner = runner
        self.max_rows = max_rows
        self.timeout = timeout
        self.llm_max_chars = llm_max_chars
        self.save_to_memory = save_to_memory
        self.description = (
            f"Run one {runner.dialect} query against the database and get the result table. "
            f"Returns the first {max_rows} rows and the total row count. Read-only unless the "
            "operator allowed writes. Use this for every question that needs data."
        )

    def get_args_schema(self) -> type[RunSqlArgs]:
        return RunSqlArgs

    async def execute(self, context: ToolContext, args: RunSqlArgs) -> ToolResult:
        try:
            runner = self.runner.for_user(context.user)
        except PermissionDeniedError as refused:
            return no_data_access(refused)
        try:
            result = await runner.run_sql(args.sql, max_rows=self.max_rows, timeout=self.timeout)
        except SqlError as error:
            return sql_failure(error, asked_as(runner, context))
        if self.save_to_memory:
            await remember_tool_use(
                context, self.name, {"sql": args.sql}, metadata={"rows": result.total_rows}
            )
        return ToolResult(
            success=True,
            result_for_llm=self.llm_summary(result),
            ui_component=self.table_component(args.sql, result),
            sources=[sql_source(self.name, args.sql, result, self.runner.parser_dialect)],
            metadata={
                "row_count": result.total_rows,
                "row_count_exact": result.total_is_exact,
                "truncated": result.truncated,
                "query_ms": round(result.elapsed_ms, 2),
                **asked_as(runner, context),
            },
        )

    def llm_summary(self, result: SqlResult) -> str:
        """The compact text the LLM sees: the row note, then a bounded CSV."""
        if not result.columns:
            return f"Statement ran; {result.rows_affected} row(s) affected."
        if not result.rows:
            return "The query returned no rows. Columns: " + ", ".join(result.columns)
        csv_text, included = bounded_csv(result.columns, result.rows, max_chars=self.llm_max_chars)
        plural = "" if result.total_rows == 1 and result.total_is_exact else "s"
        lines = [f"Query returned {result.total_text()} row{plural}."]
        if included < result.total_rows or not result.total_is_exact:
            lines[0] += f" The CSV below lists the first {included}."
        lines.append(csv_text)
        return "\n".join(lines)

    def table_component(self, sql: str, result: SqlResult) -> UiComponent:
        note, total = result.row_note(), f"{result.total_rows:,}"
        if not result.columns:
            text = f"Statement ran; {result.rows_affected} row(s) affected."
            return UiComponent(
                rich_component=DataFrameComponent.from_records([], title=text, description=sql),
                simple_component=SimpleTextComponent(text=text),
            )
        # how many rows are shown is the renderer's to say (its table may hold fewer)
        inexact = None if result.total_is_exact else f"The query has more than {total} rows."
        table = DataFrameComponent.from_records(
            result.records(),
            columns=result.columns,
            title="Query results",
            description=inexact,
            total_rows=result.total_rows,
            max_rows_displayed=self.max_rows,
        )
        shown = min(len(result.rows), 20)
        simple = text_table(result.columns, result.rows, max_rows=shown)
        footer = note if shown == len(result.rows) else f"{note} ({shown} listed here)"
        return UiComponent(
            rich_component=table,
            simple_component=SimpleTextComponent(text=f"{simple}\n({footer})"),
        )


def sql_source(tool: str, sql: str, result: SqlResult, dialect: str | None = None) -> Source:
    """The ``Source`` a query that ran gives its answer.

    >>> r = SqlResult(columns=["n"], rows=[[3]], total_rows=1)
    >>> sql_source("run_sql", "SELECT count(*) AS n FROM shop.orders", r).tables
    ['shop.orders']
    """
    rows = result.total_rows if result.columns else result.rows_affected
    return Source(
        tool=tool,
        query=sql,
        tables=tables_in(sql, dialect),
        rows=rows,
        rows_exact=result.total_is_exact,
    )


def tables_in(sql: str, dialect: str | None = None) -> list[str]:
    """The tables ``sql`` reads, qualified as written, in first-seen order; CTE names are
    not tables. ``[]`` when the text does not parse (the source is still cited).

    >>> tables_in("WITH t AS (SELECT * FROM orders) SELECT * FROM t JOIN customers c ON true")
    ['orders', 'customers']
    >>> tables_in("not sql at all (")
    []
    """
    import sqlglot  # only turns that ran SQL pay for the parser
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = sqlglot.parse(sql, read=dialect)
    except SqlglotError:
        return []
    found: dict[str, int] = {}  # name -> where it first appears in the text
    for statement in statements:
        if statement is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            name = ".".join(p for p in (table.catalog, table.db, table.name) if p)
            if not name or (not table.db and table.name.lower() in ctes):
                continue
            start = table.this.meta.get("start", len(sql)) if table.this is not None else len(sql)
            found[name] = min(found.get(name, start), start)
    # the parser walks the tree, not the text: readers expect the text's order
    return sorted(found, key=found.__getitem__)


def asked_as(runner: SqlRunner, context: ToolContext) -> dict[str, Any]:
    """What the audit record of a query says besides the person: which data identity ran it
    and in which profile.

    >>> from agent_core.users import User
    >>> class Any(SqlRunner):
    ...     async def run_sql(self, sql, *, max_rows=100, timeout=10.0): ...
    >>> asked_as(Any(), ToolContext(user=User(id="u"),
    ...     conversation_id="c", request_id="r", metadata={"request": {"profile": "fin"}}))
    {'data_identity': "the database's own user", 'profile': 'fin'}
    """
    request = context.metadata.get("request")
    profile = request.get("profile") if isinstance(request, dict) else None
    return {"data_identity": runner.identity_label or "the database's own user", "profile": profile}


def no_data_access(refused: PermissionDeniedError) -> ToolResult:
    """The failed ``ToolResult`` for a person with no data access here (nothing ran)."""
    return ToolResult(
        success=False,
        result_for_llm=f"No query ran: {refused} Tell the person exactly that.",
        error=str(refused),
        metadata={"error_type": "no_data_access"},
        refusal="permission",
    )


def sql_failure(error: SqlError, asked: dict[str, Any] | None = None) -> ToolResult:
    """The failed ``ToolResult`` for a query that could not run, with advice for the LLM."""
    advice = {
        "invalid": "Fix the SQL (check table and column names against the schema) and retry.",
        "read_only": "Only read queries are allowed; answer with a SELECT instead.",
        "timeout": "Simplify the query (filter, aggregate or add LIMIT) and retry.",
        "unavailable": "The database is not reachable; tell the user.",
    }[error.reason]
    return ToolResult(
        success=False,
        result_for_llm=f"The query failed ({error.reason}): {error}. {advice}",
        error=str(error),
        metadata={"error_type": f"sql_{error.reason}", **(asked or {})},
    )


async def remember_tool_use(
    context: ToolContext, tool_name: str, args: dict[str, Any], **kwargs: Any
) -> None:
    """Save question -> tool arguments to the agent's memory; never fails the tool."""
    if context.agent_memory is None or not context.question.strip():
        return
    try:
        await context.memory.save_tool_usage(
            context.question, tool_name, args, context, success=True, **kwargs
        )
    except Exception:  # memory is a nicety; the answer matters more
        logger.warning("could not save %s usage to agent memory", tool_name, exc_info=True)
