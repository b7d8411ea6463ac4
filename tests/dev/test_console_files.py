"""Files attached in the console (issue 13, item 2): uploaded (``POST /api/files``), then
loaded with the question through the bots' own ``bots.files`` path: the asker's table of
that conversation, queried by the scripted demo model with ``query_files``, the answer's
table in both channels; what could not be read is told in both channels in the bots'
words. The upload endpoint answers any bytes with a 2xx or a clear 4xx, never a 5xx."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_core import InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
from agent_core.agent import Agent
from agent_core.database.file_tables import FileLimits, FileTables
from agent_core.tools.files import file_scope
from bots.dev.app import create_app
from bots.dev.identity import ConsoleUserResolver, Persona
from bots.dev.turns import ConsoleOptions
from bots.files import SharedFiles
from tests.dev.conftest import ALEX, ANA, Console, TurnEvents, demo_agent

SALES = b"region,units,revenue\nEU,3,120.5\nUS,5,300\nAPAC,2,80\n"
LIMIT = 64 * 1024
THREAD = "1700000000.000200"


@pytest.fixture
def files(tmp_path: Path) -> SharedFiles:
    return SharedFiles(FileTables(tmp_path / "files", limits=FileLimits(max_bytes=LIMIT)))


@pytest.fixture
async def console(data_dir: Path, files: SharedFiles) -> AsyncIterator[Console]:
    app = create_app(demo_agent(data_dir), options=ConsoleOptions(pace=0.02), files=files)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Console(client)


async def upload(console: Console, name: str, content: bytes, user_id: str = "U0ANA") -> str:
    response = await console.client.post(
        "/api/files", params={"name": name, "user_id": user_id}, data=content
    )
    assert response.status == 200, await response.text()
    said = await response.json()
    assert said["name"] == name and said["size"] == len(content)
    return str(said["id"])


def shown(events: TurnEvents) -> tuple[str, str]:
    """Everything Slack and Teams showed in the turn, as text to search."""
    slack = json.dumps(list(events.slack_messages().values()))
    teams = json.dumps([e["activity"] for e in events.teams_activities()])
    return slack, teams


def scope(who: dict[str, Any], thread: str) -> str:
    found = file_scope(Persona(**who).request_context(thread).metadata)
    assert found is not None
    return found


async def test_an_attached_csv_is_a_table_the_answer_queries(
    console: Console, files: SharedFiles
) -> None:
    file_id = await upload(console, "sales.csv", SALES)
    events = await console.ask("what's in this file?", files=[file_id], thread=THREAD)
    assert events.outcome == "done"
    assert events.of("turn")[0]["files"] == [{"name": "sales.csv", "size": len(SALES)}]
    assert not events.components("notification")  # nothing to warn about
    [table] = events.components("dataframe")  # query_files' rows, for people
    assert [row["region"] for row in table["rich_component"]["rows"]] == ["EU", "US", "APAC"]
    text = "".join(c["rich_component"]["content"] for c in events.components("text"))
    assert "**sales.csv** is the table `sales`: 3 rows, 3 columns" in text
    slack, teams = shown(events)
    assert '"type": "table"' in slack and "APAC" in slack  # a native Slack table
    assert "APAC" in teams and "application/vnd.microsoft.card.adaptive" in teams
    assert "query_files" in slack  # the plan's step, as Slack shows it
    # Ana's table of this thread only: not Alex's in the same thread, not Ana's elsewhere
    assert files.tables.has_tables(scope(ANA, THREAD))
    assert not files.tables.has_tables(scope(ALEX, THREAD))
    assert not files.tables.has_tables(scope(ANA, "1700000000.000999"))


async def test_a_corrupt_xlsx_is_named_in_both_channels(console: Console) -> None:
    file_id = await upload(console, "book.xlsx", b"PK\x03\x04 this is not a workbook")
    events = await console.ask("what's in this file?", files=[file_id], thread=THREAD)
    assert events.outcome == "done"
    [notice] = events.components("notification")
    message = notice["rich_component"]["message"]
    assert message.startswith("• book.xlsx") and "XLSX" in message
    assert notice["rich_component"]["title"] == "Some files could not be read"
    slack, teams = shown(events)
    assert "Some files could not be read" in slack and "book.xlsx" in slack
    assert "Some files could not be read" in teams and "book.xlsx" in teams
    text = "".join(c["rich_component"]["content"] for c in events.components("text"))
    assert "I could not read the file you shared" in text


async def test_a_file_attached_as_someone_else_is_refused_unread(console: Console) -> None:
    file_id = await upload(console, "alex.csv", SALES, user_id="U0ALEX")
    events = await console.ask("what's in this file?", ANA, files=[file_id], thread=THREAD)
    [notice] = events.components("notification")
    assert notice["rich_component"]["message"] == (
        "• alex.csv was shared by someone else; I only read files you share yourself"
    )
    assert not events.components("dataframe")


async def test_uploads_over_the_limit_are_refused_in_the_bots_words(console: Console) -> None:
    said = "big.csv is larger than 64 KB, the most I read; share a smaller extract"
    response = await console.client.post(
        "/api/files", params={"name": "big.csv", "user_id": "U0ANA"}, data=b"x" * (LIMIT + 1)
    )
    assert response.status == 413 and (await response.json())["error"] == said

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: stopped while read
        for _ in range(200):
            yield b"y" * 4096

    response = await console.client.post(
        "/api/files", params={"name": "big.csv", "user_id": "U0ANA"}, data=chunked()
    )
    assert response.status == 413 and (await response.json())["error"] == said
    assert await upload(console, "fits.csv", b"x" * LIMIT)  # the limit itself is fine


async def test_bad_uploads_and_stale_attachments_get_clear_refusals(console: Console) -> None:
    for params, problem in [
        ({"user_id": "U0ANA"}, "name: Field required"),
        ({"name": "", "user_id": "U0ANA"}, "name: String should have at least 1 character"),
        ({"name": "a.csv", "user_id": "../x"}, "user_id: String should match pattern"),
    ]:
        response = await console.client.post("/api/files", params=params, data=b"n\n1\n")
        assert response.status == 400
        assert (await response.json())["error"].startswith(problem)
    file_id = await upload(console, "once.csv", b"n\n1\n")
    await console.ask("what's in this file?", files=[file_id], thread=THREAD)
    for files in ([file_id], ["nosuchupload"]):  # read once, with its question
        response = await console.client.post(
            "/api/turns",
            json={"text": "again?", "thread_id": THREAD, "persona": ANA, "files": files},
        )
        assert response.status == 400
        assert "no longer uploaded" in (await response.json())["error"]
    response = await console.client.post(
        "/api/turns", json={"text": "x", "thread_id": THREAD, "persona": ANA, "files": ["a"] * 11}
    )
    assert response.status == 400


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-files")


async def _upload_and_ask(root: Path, name: str, content: bytes) -> None:
    agent = Agent(
        llm_service=ScriptedLlmService(then=lambda request: "ok"),
        tool_registry=ToolRegistry(),
        user_resolver=ConsoleUserResolver(),
        agent_memory=InMemoryAgentMemory(),
    )
    store = SharedFiles(
        FileTables(Path(tempfile.mkdtemp(dir=root)), limits=FileLimits(max_bytes=512))
    )
    app = create_app(agent, options=ConsoleOptions(pace=0.0), files=store)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        response = await client.post(
            "/api/files", params={"name": name, "user_id": "U0ANA"}, data=content
        )
        assert response.status in (200, 400, 413), await response.text()
        if response.status != 200:
            assert (await response.json())["error"]
            return
        file_id = (await response.json())["id"]
        console = Console(client)
        events = await console.ask("what is in it?", files=[file_id], thread=THREAD)
        assert events.outcome == "done"
        loaded = await store.tables.tables(scope(ANA, THREAD))
        assert loaded or events.components("notification")  # a table, or why not


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.one_of(
        st.text(max_size=300),
        st.sampled_from(["a.csv", "b.xlsx", "c.parquet", "d.json", "e.tsv", "f.txt"]),
    ),
    content=st.binary(max_size=700),
)
@example(name="b.xlsx", content=b"PK\x03\x04garbage")
@example(name="c.parquet", content=b"PAR1garbage")
@example(name="d.json", content=b'{"a": [1, {"b": 2}]')
@example(name="a.csv", content=b"=cmd|' /C calc'!A0,b\n1,2\n")
@example(name="<!channel>.csv", content=b"")
def test_any_bytes_get_an_answer_or_a_clear_refusal(
    fuzz_root: Path, name: str, content: bytes
) -> None:
    asyncio.run(_upload_and_ask(fuzz_root, name, content))
