"""Answers with sources in Teams (issue 13, item 3), end to end through the real bot: each
query the answer used is a citation (the schema.org ``Claim`` of the AI label entity) with
its tables for everyone and its SQL as the citation's content only where the asker may see
SQL and nobody else reads the chat."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from botbuilder.schema import Activity

from adapters.teams.activities import MAX_CITATIONS, MAX_CITED_SQL
from adapters.teams.limits import MESSAGE_LIMIT
from agent_core import Agent, ScriptedLlmService, ToolRegistry
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse, ScriptEntry
from agent_core.tools.sql import RunSqlTool
from agent_core.users import UserResolver
from bots.teams.settings import TeamsSettings
from tests.adapters.teams.schemas import assert_valid_card
from tests.agent_kind import agent_class
from tests.bots.teams.harness import ADMIN, MEMBER, teams_bot

SQL = (
    "SELECT r.name, sum(s.revenue) FROM sales s JOIN regions r ON r.id = s.region "
    "WHERE s.note = 'secret-filter' GROUP BY r.name"
)


def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE regions (id INTEGER, name TEXT)")
        db.execute("CREATE TABLE sales (region INTEGER, revenue REAL, note TEXT)")
        db.executemany("INSERT INTO regions VALUES (?, ?)", [(1, "North"), (2, "South")])
        db.execute("INSERT INTO sales VALUES (1, 10.0, 'secret-filter')")
    return path


def sql_agent(db: Path, script: list[ScriptEntry]) -> Any:
    def build(resolver: UserResolver, settings: TeamsSettings) -> Agent:
        tools = ToolRegistry()
        tools.register_local_tool(RunSqlTool(SqlAlchemyRunner.sqlite(db)), access_groups=["user"])
        return agent_class()(
            llm_service=ScriptedLlmService(script), tool_registry=tools, user_resolver=resolver
        )

    return build


def citations_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    [entity] = [e for e in answer.get("entities", []) if e.get("@type") == "Message"]
    assert entity["additionalType"] == ["AIGeneratedContent"]
    cited: list[dict[str, Any]] = entity["citation"]
    for claim in cited:
        appearance = claim["appearance"]
        assert appearance["@type"] == "DigitalDocument" and len(appearance["abstract"]) <= 160
        if "text" in appearance:
            assert appearance["encodingFormat"] == "application/vnd.microsoft.card.adaptive"
            assert_valid_card(json.loads(appearance["text"]))
    # the Bot Framework's own model reads the entity back unchanged
    parsed = Activity().deserialize(answer)
    assert parsed.entities[-1].additional_properties["citation"] == cited
    return cited


@pytest.mark.parametrize(
    ("user", "kind", "sql_shown"),
    [
        (ADMIN, "personal", True),
        (MEMBER, "personal", False),
        (ADMIN, "groupChat", False),  # others read the chat: the admin gets the SQL privately
    ],
)
async def test_each_query_is_a_citation_with_its_sql_only_where_allowed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, user: str, kind: str, sql_shown: bool
) -> None:
    script: list[ScriptEntry] = [ScriptedResponse.tool("run_sql", {"sql": SQL}), "North leads."]
    async with teams_bot(monkeypatch, agent_factory=sql_agent(shop(tmp_path), script)) as bot:
        await bot.post(bot.message("revenue by region?", kind=kind, user=user))
        answer = (await bot.final()).body
        assert answer["text"].endswith("Sources: [1]")
        [claim] = citations_of(answer)
        assert claim["position"] == 1
        appearance = claim["appearance"]
        assert (appearance["name"], appearance["abstract"]) == (
            "SQL query",
            "sales, regions · 1 row",
        )
        assert ("secret-filter" in json.dumps(answer)) is sql_shown
        if sql_shown:
            card = json.loads(appearance["text"])
            assert card["body"][-1]["inlines"][0]["text"] == SQL
        if user == MEMBER:  # nothing anywhere carries the SQL
            assert "secret-filter" not in json.dumps([c.body for c in bot.fake.calls])


async def test_long_and_many_citations_stay_within_teams_limits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A citation longer than Teams allows: the SQL is cut (with a note) and at most 20
    citations ride on one message, which stays under Teams' message size."""
    padding = " OR ".join(f"s.note = 'value-{n:05d}'" for n in range(800))
    long_sql = f"SELECT count(*) FROM sales s WHERE {padding}"
    assert len(long_sql) > 2 * MAX_CITED_SQL
    calls = [("run_sql", {"sql": f"SELECT {n} AS n FROM regions"}) for n in range(24)]
    script: list[ScriptEntry] = [
        ScriptedResponse.tool("run_sql", {"sql": long_sql}),
        ScriptedResponse.tools(*calls),
        "Done.",
    ]
    async with teams_bot(monkeypatch, agent_factory=sql_agent(shop(tmp_path), script)) as bot:
        await bot.post(bot.message("everything?", kind="personal", user=ADMIN))
        answer = (await bot.final()).body
        cited = citations_of(answer)
        assert len(cited) == MAX_CITATIONS
        assert answer["text"].endswith(" ".join(f"[{n}]" for n in range(1, 21)))
        first = json.loads(cited[0]["appearance"]["text"])
        shown = first["body"][-1]["inlines"][0]["text"]
        assert len(shown) <= MAX_CITED_SQL and long_sql.startswith(shown[:-1])
        assert "The query is longer" in json.dumps(first)
        assert len(json.dumps(answer).encode()) < MESSAGE_LIMIT
