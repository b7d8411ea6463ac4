"""The README's "Who sees which rows" example is real: its SQL runs on a fresh PostgreSQL,
its ``threadline.toml`` loads, and each person then sees the rows it promises."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.database.access import DataAccess
from agent_core.database.identity import NoDataAccess
from agent_core.users import User
from bots.serving import load_config
from tests.support.postgres_server import PostgresServer, postgres_bin

README = Path(__file__).resolve().parents[2] / "README.md"
pytestmark = pytest.mark.postgres


def block(language: str) -> str:
    section = README.read_text().split("## Who sees which rows", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)
    assert found is not None, f"no {language} block in the section"
    return found.group(1)


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg")
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed")
    server = PostgresServer()  # its own: the example creates cluster-wide roles
    server.start()
    yield server
    server.remove()


async def test_the_readme_postgres_example_gives_each_person_their_rows(
    server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.execute("CREATE DATABASE sales")
    statements = [s.strip() for s in block("sql").split(";\n") if s.strip()]
    server.execute(*statements, database="sales")
    server.execute(
        "INSERT INTO deals VALUES (1, 'ana@example.com', 100), (2, 'ben@example.com', 7)",
        "INSERT INTO finance.salaries VALUES ('Ana', 98765)",
        database="sales",
    )
    toml = block("toml").replace("db.internal:5432", f"127.0.0.1:{server.port}")
    (tmp_path / "threadline.toml").write_text(toml, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("THREADLINE_DATABASE_URL", raising=False)
    config = load_config(argparse.Namespace(command="dev")).database.config()
    access = DataAccess(config)

    async def seen(user: User, sql: str) -> list[list[object]]:
        return (await access.for_user(user).run_sql(sql)).rows

    ana = User(id="slack:T1:UA", email="ana@example.com", group_memberships=["sales"])
    cfo = User(id="slack:T1:UC", email="cfo@example.com", group_memberships=["sales"])
    eve = User(id="slack:T1:UE", email="eve@example.com", group_memberships=["marketing"])
    assert await seen(ana, "SELECT id FROM deals ORDER BY id") == [[1]]
    assert await seen(cfo, "SELECT id FROM deals ORDER BY id") == [[1], [2]]  # user: wins
    assert await seen(cfo, "SELECT pay FROM finance.salaries") == [[98765]]
    with pytest.raises(NoDataAccess):
        await seen(eve, "SELECT 1")
