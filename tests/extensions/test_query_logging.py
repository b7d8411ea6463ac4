"""``QueryLoggingHook`` through real agent turns, and the two log utilities."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_core import (
    LlmRequest,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    ToolContext,
    ToolResult,
    User,
    UserResolver,
)
from agent_core.extensions.query_logging import (
    QueryLoggingHook,
    analyze_query_log,
    export_successful_queries,
)

from .conftest import USER, FakeRunSql, NoteTool, build_agent, final_text, run_turn


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class MetadataUserResolver(UserResolver):
    """Resolves the user named in the request metadata (as a channel would)."""

    async def resolve_user(self, request_context: RequestContext) -> User:
        return User(id=request_context.metadata["user_id"], group_memberships=["user"])


def sql_for_each_question(request: LlmRequest) -> ScriptedResponse:
    """Two run_sql calls derived from the question, then a text answer."""
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text="done")
    return ScriptedResponse.tools(
        ("run_sql", {"sql": f"SELECT '{last.content}' AS a"}),
        ("run_sql", {"sql": f"SELECT '{last.content}' AS b"}),
    )


async def test_run_sql_executions_are_logged_and_other_tools_are_not(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "queries.jsonl"
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tools(("run_sql", {"sql": "SELECT 1"}), ("note", {"text": "hi"})),
            ScriptedResponse.tool("run_sql", {"sql": "BAD SQL"}),
            "Done.",
        ]
    )
    hook = QueryLoggingHook(log, include_result_preview=True)
    agent = build_agent(llm, FakeRunSql(), NoteTool(), lifecycle_hooks=[hook])
    assert final_text(await run_turn(agent, "How many users?")) == "Done."

    ok, failed = read_log(log)
    assert datetime.fromisoformat(ok["timestamp"]).utcoffset() == UTC.utcoffset(None)
    assert {k: v for k, v in ok.items() if k not in ("timestamp", "arguments")} == {
        "tool_name": "run_sql",
        "success": True,
        "user_id": USER.id,
        "question": "How many users?",
        "result_preview": ("rows for SELECT 1: " + "x" * 200)[:100],
    }
    assert failed["success"] is False and failed["error"] == "syntax error"


async def test_log_all_tools_logs_every_tool_without_preview(tmp_path: Path) -> None:
    log = tmp_path / "queries.jsonl"
    llm = ScriptedLlmService([ScriptedResponse.tool("note", {"text": "hi"}), "Noted."])
    agent = build_agent(
        llm, NoteTool(), lifecycle_hooks=[QueryLoggingHook(log, log_all_tools=True)]
    )
    await run_turn(agent, "remember hi")
    (entry,) = read_log(log)
    assert entry["tool_name"] == "note" and "result_preview" not in entry


async def test_arguments_are_logged_with_secrets_redacted(tmp_path: Path) -> None:
    log = tmp_path / "queries.jsonl"
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("run_sql", {"sql": "SELECT 1", "api_key": "sk-live-123"}),
            "ok",
        ]
    )
    agent = build_agent(llm, FakeRunSql(), lifecycle_hooks=[QueryLoggingHook(log)])
    await run_turn(agent, "q")
    (entry,) = read_log(log)
    assert entry["arguments"] == {"sql": "SELECT 1", "api_key": "[REDACTED]"}


async def test_registry_supplied_arguments_are_redacted(tmp_path: Path) -> None:
    """The hook's own contract, called as the agent calls it: before_tool, then after_tool
    with a result carrying the call's arguments in its metadata."""
    log = tmp_path / "queries.jsonl"
    hook = QueryLoggingHook(log)
    context = ToolContext(user=USER, conversation_id="c", request_id="r", question="q?")
    handle = await hook.before_tool(FakeRunSql(), context)
    await hook.after_tool(
        ToolResult(
            success=True,
            result_for_llm="1 row",
            metadata={"arguments": {"sql": "SELECT 1", "db": {"password": "hunter2"}}},
        ),
        handle,
    )
    (entry,) = read_log(log)
    assert entry["arguments"] == {"sql": "SELECT 1", "db": {"password": "[REDACTED]"}}
    assert (entry["user_id"], entry["question"]) == (USER.id, "q?")


async def test_interleaved_calls_pair_through_their_own_handles(tmp_path: Path) -> None:
    """Two calls of one task, interleaved (A starts, B starts, B ends, A ends): each
    ``after_tool`` logs the question of its own ``before_tool``, from the handle the agent
    hands back, not the latest call's (a per-task slot would log B's for both)."""
    log = tmp_path / "queries.jsonl"
    hook = QueryLoggingHook(log)
    ana = ToolContext(user=USER, conversation_id="c1", request_id="r1", question="ana's?")
    bo = ToolContext(user=USER, conversation_id="c2", request_id="r2", question="bo's?")
    first = await hook.before_tool(FakeRunSql(), ana)
    second = await hook.before_tool(FakeRunSql(), bo)
    for handle, sql in ((second, "SELECT 'b'"), (first, "SELECT 'a'")):
        done = ToolResult(
            success=True, result_for_llm="1 row", metadata={"arguments": {"sql": sql}}
        )
        await hook.after_tool(done, handle)
    logged = [(entry["arguments"]["sql"], entry["question"]) for entry in read_log(log)]
    assert logged == [("SELECT 'b'", "bo's?"), ("SELECT 'a'", "ana's?")]


async def test_concurrent_tool_calls_of_concurrent_turns_keep_their_own_context(
    tmp_path: Path,
) -> None:
    """All four calls (two per turn, two turns at once) are inside the tool at the same
    time, so every before_tool runs before any after_tool: per-instance state would log the
    last user's question for everyone."""
    log = tmp_path / "queries.jsonl"
    hook = QueryLoggingHook(log)
    agent = build_agent(
        ScriptedLlmService(then=sql_for_each_question),
        FakeRunSql(asyncio.Barrier(4)),
        lifecycle_hooks=[hook],
        user_resolver=MetadataUserResolver(),
    )
    questions = {"u-ana": "sales by region?", "u-bo": "top customers?"}
    answers = await asyncio.gather(
        *(
            run_turn(agent, question, context=RequestContext(metadata={"user_id": user}))
            for user, question in questions.items()
        )
    )
    assert [final_text(a) for a in answers] == ["done", "done"]
    entries = read_log(log)
    assert len(entries) == 4
    assert all(questions[e["user_id"]] == e["question"] for e in entries)
    assert sorted(e["user_id"] for e in entries) == ["u-ana", "u-ana", "u-bo", "u-bo"]


async def test_an_unwritable_log_never_breaks_the_turn_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the log's directory should be")
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("run_sql", {"sql": "SELECT 1"}),
            ScriptedResponse.tool("run_sql", {"sql": "SELECT 2"}),
            "Still answered.",
        ]
    )
    agent = build_agent(
        llm, FakeRunSql(), lifecycle_hooks=[QueryLoggingHook(blocker / "queries.jsonl")]
    )
    with caplog.at_level(logging.WARNING, logger="threadline.query_log"):
        components = await run_turn(agent, "q")
    assert final_text(components) == "Still answered."
    assert llm.requests[1].messages[-1].content.startswith("rows for SELECT 1")
    warnings = [r for r in caplog.records if r.name == "threadline.query_log"]
    assert len(warnings) == 1 and "cannot write the query log" in warnings[0].getMessage()


def write_lines(path: Path, entries: list[dict[str, Any] | str]) -> None:
    path.write_text(
        "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries),
        encoding="utf-8",
    )


def entry(tool: str, success: bool, user: str, **extra: Any) -> dict[str, Any]:
    return {
        "timestamp": "2025-01-01T00:00:00+00:00",
        "tool_name": tool,
        "success": success,
        "user_id": user,
        **extra,
    }


@pytest.fixture
def mixed_log(tmp_path: Path) -> Path:
    path = tmp_path / "queries.jsonl"
    write_lines(
        path,
        [
            entry("run_sql", True, "a", question="users?", arguments={"sql": "SELECT count(*)"}),
            entry("run_sql", True, "b", question="users?", arguments={"sql": "SELECT count(*)"}),
            entry("run_sql", True, "a", question="orders?", arguments={"sql": "SELECT 2"}),
            entry("run_sql", True, "a", arguments={"sql": "SELECT 3"}),  # no question
            entry(
                "run_sql",
                False,
                "c",
                question="bad?",
                arguments={"sql": "BAD"},
                error="syntax error",
            ),
            entry("run_sql", False, "c", error="syntax error"),
            entry("note", True, "a", question="remember", arguments={"text": "x"}),
            entry("note", False, "b", error="timeout"),
            "{not json",
            '["a", "list"]',
            '{"tool_name": "run_sql"}',
            "",
        ],
    )
    return path


def test_analyze_query_log_summarises_and_counts_malformed_lines(mixed_log: Path) -> None:
    stats = analyze_query_log(mixed_log)
    assert (stats.total, stats.successful, stats.failed) == (8, 5, 3)
    assert stats.success_rate == 5 / 8
    assert stats.malformed_lines == 3
    assert stats.tool_counts == {"run_sql": 6, "note": 2}
    assert [(e.error, e.count) for e in stats.top_errors] == [("syntax error", 2), ("timeout", 1)]
    assert stats.unique_users == 3
    report = str(stats)
    assert report == stats.format()
    for line in (
        "Total executions: 8",
        "Successful: 5 (62.5%)",
        "Unique users: 3",
        "Malformed lines skipped: 3",
        "  run_sql: 6",
        "  2x syntax error",
    ):
        assert line in report.splitlines()


def test_export_successful_queries_writes_question_sql_pairs(
    mixed_log: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    output = tmp_path / "training.jsonl"
    with caplog.at_level(logging.WARNING, logger="threadline.query_log"):
        exported = export_successful_queries(mixed_log, output)
    assert exported == 2
    assert read_log(output) == [
        {"question": "users?", "sql": "SELECT count(*)"},
        {"question": "orders?", "sql": "SELECT 2"},
    ]
    (warning,) = caplog.records
    assert "skipped 3 malformed line(s)" in warning.getMessage()


def test_analyze_an_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    stats = analyze_query_log(path)
    assert (stats.total, stats.success_rate, stats.malformed_lines) == (0, 0.0, 0)
    assert "Total executions: 0" in stats.format()
