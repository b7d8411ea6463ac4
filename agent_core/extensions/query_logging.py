"""``QueryLoggingHook``: every (SQL) tool execution as one JSON line, plus two log utilities.

The hook appends entries like::

    {"timestamp": "2025-01-01T12:00:00+00:00", "tool_name": "run_sql", "success": true,
     "user_id": "u1", "question": "How many users?", "arguments": {"sql": "SELECT ..."}}

``analyze_query_log`` summarises a log; ``export_successful_queries`` turns it into
question -> SQL training pairs. Both are offline utilities (plain functions reading a file);
from async code call them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_core.audit import redact_secrets
from agent_core.clock import utcnow
from agent_core.extensions.hooks import LifecycleHook

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.tool_contract import Tool, ToolResult

logger = logging.getLogger("threadline.query_log")

DEFAULT_LOG_FILE = "threadline_query_log.jsonl"
SQL_TOOL = "run_sql"
PREVIEW_CHARS = 100


@dataclass(frozen=True, slots=True)
class _CallInfo:
    """What ``before_tool`` knows and ``after_tool`` does not: the hook's handle on one call,
    which the agent hands back to ``after_tool`` for that call."""

    tool_name: str
    user_id: str
    question: str


class QueryLogEntry(BaseModel):
    """One line of the query log."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    timestamp: str
    tool_name: str
    success: bool
    user_id: str | None = None
    question: str | None = None
    arguments: dict[str, Any] | None = None
    error: str | None = None
    result_preview: str | None = None


class QueryLoggingHook(LifecycleHook):
    """Appends each ``run_sql`` execution (every tool with ``log_all_tools=True``) to a JSON
    Lines file, off the event loop; a failing disk is logged once and never breaks a turn.

    Tool name, user and question come from ``before_tool``, in the handle it returns (the
    agent hands each call's handle back to ``after_tool``, so concurrent calls never mix);
    the arguments from the result's ``metadata["arguments"]`` (set by the
    ``ToolRegistry``), secrets redacted.

    >>> hook = QueryLoggingHook("queries.jsonl", include_result_preview=True)
    >>> hook.log_file.name
    'queries.jsonl'
    >>> # Agent(..., lifecycle_hooks=[hook])
    """

    def __init__(
        self,
        log_file: str | Path = DEFAULT_LOG_FILE,
        *,
        log_all_tools: bool = False,
        include_result_preview: bool = False,
    ) -> None:
        self.log_file = Path(log_file)
        self.log_all_tools = log_all_tools
        self.include_result_preview = include_result_preview
        self._lock = threading.Lock()  # writes happen in worker threads
        self._failing = False

    async def before_tool(self, tool: Tool[Any], context: ToolContext) -> _CallInfo:
        return _CallInfo(tool.name, context.user.id, context.question)

    async def after_tool(self, result: ToolResult, before: object) -> ToolResult | None:
        call = before if isinstance(before, _CallInfo) else None
        entry = self._entry_for(call, result)
        if entry is not None:
            await asyncio.to_thread(self._append, _to_json_line(entry))
        return None

    def _entry_for(self, call: _CallInfo | None, result: ToolResult) -> QueryLogEntry | None:
        """The entry to log for ``result``, or ``None`` when this tool is not logged."""
        tool_name = result.metadata.get("tool_name") or (call.tool_name if call else None)
        if tool_name is None or (not self.log_all_tools and tool_name != SQL_TOOL):
            return None
        arguments = result.metadata.get("arguments")
        return QueryLogEntry(
            timestamp=utcnow().isoformat(),
            tool_name=str(tool_name),
            success=result.success,
            user_id=call.user_id if call else None,
            question=call.question if call else None,
            arguments=redact_secrets(arguments)[0] if isinstance(arguments, dict) else None,
            error=result.error,
            result_preview=(
                result.result_for_llm[:PREVIEW_CHARS] if self.include_result_preview else None
            ),
        )

    def _append(self, line: str) -> None:
        """Runs in a worker thread; the lock keeps concurrent lines whole and in one piece."""
        with self._lock:
            try:
                self.log_file.parent.mkdir(parents=True, exist_ok=True)
                with self.log_file.open("a", encoding="utf-8") as stream:
                    stream.write(line)
            except Exception as failed:  # a log must never break the tool pipeline
                if not self._failing:  # one warning per outage, not one per tool call
                    logger.warning("cannot write the query log %s: %s", self.log_file, failed)
                self._failing = True
            else:
                self._failing = False


def _to_json_line(entry: QueryLogEntry) -> str:
    # default=str: tool arguments may hold values JSON does not know (dates, decimals)
    return json.dumps(entry.model_dump(exclude_none=True), default=str, ensure_ascii=False) + "\n"


def _read_entries(log_file: str | Path, malformed: list[int]) -> Iterator[QueryLogEntry]:
    """The valid entries of ``log_file``; appends the line number of each malformed line."""
    with Path(log_file).open(encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                yield QueryLogEntry.model_validate_json(line)
            except ValidationError:
                malformed.append(number)


class ErrorCount(BaseModel):
    model_config = ConfigDict(defer_build=True)

    error: str
    count: int


class QueryLogStats(BaseModel):
    """Summary of a query log; ``str(stats)`` / ``stats.format()`` is the printable report.

    >>> QueryLogStats(total=4, successful=3, failed=1).success_rate
    0.75
    """

    model_config = ConfigDict(defer_build=True)

    log_file: str = ""
    total: int = 0
    successful: int = 0
    failed: int = 0
    malformed_lines: int = 0
    tool_counts: dict[str, int] = Field(default_factory=dict)
    top_errors: list[ErrorCount] = Field(default_factory=list)
    unique_users: int = 0

    @property
    def success_rate(self) -> float:
        return self.successful / self.total if self.total else 0.0

    def format(self) -> str:
        lines = [
            f"Query log: {self.log_file}",
            f"Total executions: {self.total}",
            f"Successful: {self.successful} ({self.success_rate:.1%})",
            f"Failed: {self.failed}",
            f"Unique users: {self.unique_users}",
        ]
        if self.malformed_lines:
            lines.append(f"Malformed lines skipped: {self.malformed_lines}")
        if self.tool_counts:
            lines.append("Executions by tool:")
            lines += [f"  {name}: {count}" for name, count in self.tool_counts.items()]
        if self.top_errors:
            lines.append("Top errors:")
            lines += [f"  {e.count}x {e.error}" for e in self.top_errors]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def analyze_query_log(log_file: str | Path, *, top: int = 5) -> QueryLogStats:
    """Totals, success rate, executions per tool, the ``top`` errors and unique users.

    >>> print(analyze_query_log("queries.jsonl"))  # doctest: +SKIP
    """
    malformed: list[int] = []
    tools: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    users: set[str] = set()
    successful = 0
    for entry in _read_entries(log_file, malformed):
        tools[entry.tool_name] += 1
        successful += entry.success
        if not entry.success:
            errors[entry.error or "(no error message)"] += 1
        if entry.user_id is not None:
            users.add(entry.user_id)
    total = sum(tools.values())
    return QueryLogStats(
        log_file=str(log_file),
        total=total,
        successful=successful,
        failed=total - successful,
        malformed_lines=len(malformed),
        tool_counts=dict(tools.most_common()),
        top_errors=[ErrorCount(error=e, count=n) for e, n in errors.most_common(top)],
        unique_users=len(users),
    )


def export_successful_queries(log_file: str | Path, output_file: str | Path) -> int:
    """Write ``{"question": ..., "sql": ...}`` lines for each successful ``run_sql`` entry
    with a question (identical pairs once) to ``output_file``; returns how many were written.

    Malformed lines are skipped and counted in one warning.
    """
    malformed: list[int] = []
    seen: set[tuple[str, str]] = set()
    with Path(output_file).open("w", encoding="utf-8") as out:
        for entry in _read_entries(log_file, malformed):
            sql = (entry.arguments or {}).get("sql")
            if entry.tool_name != SQL_TOOL or not entry.success or not entry.question:
                continue
            if not isinstance(sql, str) or (entry.question, sql) in seen:
                continue
            seen.add((entry.question, sql))
            out.write(json.dumps({"question": entry.question, "sql": sql}, ensure_ascii=False))
            out.write("\n")
    if malformed:
        logger.warning(
            "skipped %d malformed line(s) of %s (lines %s)",
            len(malformed),
            log_file,
            ", ".join(map(str, malformed[:10])),
        )
    return len(seen)
