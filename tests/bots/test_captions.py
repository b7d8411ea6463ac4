"""Issue 17, item 7: what a cut table and a refusal say, through both bots.

The real ``RunSqlTool`` over a 400-row SQLite table (it fetches 100 rows): Slack showed
"Showing 100 of 400 rows" and "Showing 99 of 400 rows" on one table, Teams "Showing 100 of
400" over a card of 16, and the Teams file consent card offered "all the rows" for a file of
100 of 400. The quota refusal read "Error · error" in Slack.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_core import (
    Agent,
    ErrorRecoveryStrategy,
    InMemoryAgentMemory,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
    UserResolver,
)
from agent_core.database import SqlAlchemyRunner
from agent_core.state.quotas import MemoryRateLimiter, RateLimitHook
from agent_core.state_factory import State
from agent_core.tools.sql import RunSqlTool
from tests.bots.slack.harness import running_bot
from tests.bots.teams.harness import teams_bot

CONSENT = "application/vnd.microsoft.teams.card.file.consent"


def database(tmp_path: Path) -> Path:
    path = tmp_path / "orders.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER, customer TEXT, note TEXT)")
        rows = [(i, f"customer {i}", "x" * 120) for i in range(400)]
        db.executemany("INSERT INTO orders VALUES (?, ?, ?)", rows)
    return path


def sql_agent(db: Path, resolver: UserResolver, **options: Any) -> Agent:
    tools = ToolRegistry()
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(db), max_rows=100)
    tools.register_local_tool(tool, ["user", "member"])
    script = [ScriptedResponse.tool("run_sql", {"sql": "SELECT * FROM orders"}), "All orders."]
    return Agent(
        llm_service=ScriptedLlmService(script),
        tool_registry=tools,
        user_resolver=resolver,
        agent_memory=InMemoryAgentMemory(),
        error_recovery_strategy=ErrorRecoveryStrategy(),
        **options,
    )


def texts_of(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["text"]] if isinstance(node.get("text"), str) else []
        return own + [t for value in node.values() for t in texts_of(value)]
    if isinstance(node, list):
        return [t for item in node for t in texts_of(item)]
    return []


async def test_a_cut_slack_table_says_once_what_it_shows_and_what_is_attached(
    tmp_path: Path,
) -> None:
    db = database(tmp_path)

    def agent(resolver: UserResolver, state: State) -> Agent:
        return sql_agent(db, resolver)

    async with running_bot(tmp_path, [], agent_factory=agent) as h:
        await h.event(
            {
                "type": "app_mention",
                "user": "U1",
                "text": "<@UBOT> orders",
                "ts": "10.0",
                "channel": "C1",
            }
        )
        await h.idle()
        thread = h.fake.thread("C1", "10.0")
        [table] = [m for m in thread if any(b["type"] == "table" for b in m.blocks)]
        captions = [t for t in texts_of(table.blocks) if "rows" in t]
        assert captions == [
            "Showing 99 of 400 rows · the first 100 rows are attached as `query-results.csv`"
        ]
        upload = next(iter(h.fake.uploads.values()))
        assert len(list(csv.reader(io.StringIO(upload.decode())))) == 1 + 100


async def test_a_cut_teams_table_and_its_csv_offer_say_what_they_hold(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = database(tmp_path)

    def agent(resolver: UserResolver, settings: Any) -> Agent:
        return sql_agent(db, resolver)

    async with teams_bot(monkeypatch, agent_factory=agent) as bot:
        await bot.post(bot.message("orders"))
        final = await bot.final()
        body = json.dumps(final.body)
        assert "Showing 100 of 400" not in body
        notes = [t for t in texts_of(final.body) if t.startswith("Showing")]
        assert len(notes) == 1 and notes[0].endswith(" of 400 rows.")
        [consent] = [a for a in final.body["attachments"] if a["contentType"] == CONSENT]
        assert consent["content"]["description"] == (
            "Query_results.csv: the first 100 of 400 rows, as CSV"
        )


async def test_the_slack_quota_refusal_does_not_read_error_error(tmp_path: Path) -> None:
    hook = RateLimitHook(MemoryRateLimiter(), limit=1, window=3600)
    async with running_bot(tmp_path, ["First answer."], hooks=[hook]) as h:
        for ts in ("20.0", "21.0"):
            await h.event(
                {
                    "type": "app_mention",
                    "user": "U1",
                    "text": "<@UBOT> hi",
                    "ts": ts,
                    "channel": "C1",
                }
            )
        await h.idle()
        [refusal] = h.fake.thread("C1", "21.0")
        line = texts_of(refusal.blocks)[0]
        assert line.startswith(":x: *Not answered*\nYou have reached your limit of 1")
        assert "· error" not in json.dumps(refusal.blocks)
