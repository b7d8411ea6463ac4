"""End to end: a file sent to the bot in a Teams personal chat becomes the asker's table.

Signed activities with ``file.download.info`` attachments into the real CloudAdapter; the bot
downloads the pre-authenticated ``downloadUrl`` from the fake and the scripted model queries
the table with ``query_files``; the answer card is checked against the Adaptive Card schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.teams.testing import ConnectorCall
from agent_core.database.file_tables import FileLimits, FileTables
from agent_core.llm.scripted import ScriptedResponse
from bots.files import SharedFiles
from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.bots.teams.harness import TeamsHarness, teams_bot

SALES = b"region,amount\nEU,10\nEU,5\nUS,7\n"


def store(tmp_path: Path, **limits: Any) -> SharedFiles:
    tables = FileTables(tmp_path / "files", limits=FileLimits(**limits))
    return SharedFiles(tables, allow_http=True)  # the fake's download URL is plain http


def with_file(
    bot: TeamsHarness, text: str, *files: dict[str, Any], **kwargs: Any
) -> dict[str, Any]:
    activity = bot.message(text, **kwargs)
    activity["attachments"] = list(files)
    return activity


def downloads(bot: TeamsHarness) -> list[ConnectorCall]:
    return [c for c in bot.fake.calls if c.operation == "download"]


def tool_results(bot: TeamsHarness) -> list[str]:
    return [m.content or "" for r in bot.llm.requests for m in r.messages if m.role == "tool"]


def texts(bot: TeamsHarness) -> str:
    return json.dumps([c.body for c in bot.fake.calls if isinstance(c.body, dict)])


async def test_a_csv_sent_in_a_personal_chat_is_queried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sql = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region"
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "EU leads with 15."]
    async with teams_bot(monkeypatch, script, shared_files=store(tmp_path)) as bot:
        shared = bot.fake.share_file("sales.csv", SALES)
        await bot.post(with_file(bot, "what is the trend?", shared))
        final = await bot.final()
        [download] = downloads(bot)
        assert "Authorization" not in download.headers  # pre-authenticated: no token sent
        question = bot.llm.requests[0].messages[-1].content or ""
        assert question.startswith("what is the trend?")
        assert "sales (from sales.csv, 3 rows): region VARCHAR, amount BIGINT" in question
        assert "EU,15" in tool_results(bot)[0].replace(" ", "")
        (card,) = cards_in(final.body)
        assert_valid_card(card)
        table = next(e for e in card["body"] if e["type"] == "Table")
        assert [c["items"][0]["text"] for c in table["rows"][1]["cells"]] == ["EU", "15"]
        assert final.text.startswith("EU leads with 15.")  # then its sources: the file's table
        [entity] = [e for e in final.body["entities"] if e.get("@type") == "Message"]
        assert "sales" in json.dumps(entity["citation"])


async def test_a_corrupt_xlsx_is_told_and_the_question_still_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    corrupt = b"PK\x03\x04" + b"\x00not a workbook" * 50
    async with teams_bot(
        monkeypatch, ["I could not open it."], shared_files=store(tmp_path)
    ) as bot:
        await bot.post(with_file(bot, "sum it", bot.fake.share_file("book.xlsx", corrupt)))
        final = await bot.final()
        assert "book.xlsx is not a valid XLSX workbook" in texts(bot)
        assert "could not be read: book.xlsx" in (bot.llm.requests[0].messages[-1].content or "")
        assert final.text == "I could not open it."


async def test_a_file_over_the_limit_stops_downloading_at_the_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    big = b"n\n" + b"1\n" * 10_000
    async with teams_bot(
        monkeypatch, ["Too big."], shared_files=store(tmp_path, max_bytes=2_000)
    ) as bot:
        await bot.post(with_file(bot, "sum it", bot.fake.share_file("big.csv", big)))
        await bot.final()
        assert "big.csv is larger than" in texts(bot)
        assert not any(p.glob("*.duckdb") for p in [tmp_path / "files"] if p.exists())


async def test_another_person_cannot_query_the_askers_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = [
        "Loaded.",
        ScriptedResponse.tool("query_files", {"sql": "SELECT * FROM sales"}),
        "Nothing for you.",
    ]
    async with teams_bot(monkeypatch, script, shared_files=store(tmp_path)) as bot:
        await bot.post(with_file(bot, "keep this", bot.fake.share_file("sales.csv", SALES)))
        await bot.final()
        await bot.post(bot.message("show me sales", user="aad-bo", user_name="Bo"))
        await bot.final(count=2)
        assert tool_results(bot)[-1].startswith("No files were shared with you")


def salaries_database(tmp_path: Path) -> Path:
    import duckdb

    path = tmp_path / "team.duckdb"
    with duckdb.connect(str(path)) as made:
        made.execute("CREATE TABLE salaries AS SELECT 'Ana' AS name, 'pay-987654' AS salary")
    return path


def analysts_agent(database: Path, script: list[Any]) -> Any:
    """``run_sql`` over the team's DuckDB database for analysts only; ``query_files`` (added
    by the bot) for everyone."""
    from agent_core import Agent, ScriptedLlmService, ToolRegistry
    from agent_core.database import SqlAlchemyRunner
    from agent_core.tools.sql import RunSqlTool
    from tests.agent_kind import agent_class

    def build(resolver: Any, settings: Any) -> Agent:
        tools = ToolRegistry()
        runner = SqlAlchemyRunner(f"duckdb:///{database}")
        tools.register_local_tool(RunSqlTool(runner), access_groups=["analyst"])
        return agent_class()(
            llm_service=ScriptedLlmService(script), tool_registry=tools, user_resolver=resolver
        )

    return build


@pytest.mark.parametrize(("groups", "joined"), [([], False), (["analyst"], True)])
async def test_query_files_joins_the_database_only_for_people_who_may_run_sql(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, groups: list[str], joined: bool
) -> None:
    """Regression for issue 22 item 3: a Teams user with no groups, refused ``run_sql``, read
    ``db.salaries`` through ``query_files``, which joined the team's database for anyone."""
    sql = "SELECT s.name, s.salary FROM db.salaries s"
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "Done."]
    database = salaries_database(tmp_path)
    async with teams_bot(
        monkeypatch,
        agent_factory=analysts_agent(database, script),
        shared_files=store(tmp_path),
        default_groups=groups,
    ) as bot:
        shared = bot.fake.share_file("sales.csv", SALES)
        await bot.post(with_file(bot, "salaries?", shared))
        await bot.final()
        [result] = tool_results(bot)
        assert ("987654" in result) is joined
        assert ("987654" in texts(bot)) is joined
