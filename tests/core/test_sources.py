"""Answers with sources (issue 13, item 3): each query a turn's tools ran is cited once, just
before the final answer, with who may see its SQL decided by the ``tool_arguments`` feature."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core import Agent, AgentConfig, ScriptedLlmService
from agent_core.components import SourcesComponent
from agent_core.config import UiFeatures
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse
from agent_core.tools.sql import RunSqlTool, tables_in
from tests.core.conftest import ADMIN, USER, collect, types_of

ORDERS = "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        db.execute("CREATE TABLE orders (id INTEGER, customer INTEGER)")
        db.executemany("INSERT INTO orders VALUES (?, ?)", [(1, 1), (2, 1), (3, 2)])
        db.executemany("INSERT INTO customers VALUES (?, ?)", [(1, "Acme"), (2, "Globex")])
    return path


def sql_turn(make_agent: Callable[..., Agent], shop: Path, *script: object, **kw: object) -> Agent:
    tool = RunSqlTool(SqlAlchemyRunner.sqlite(shop))
    return make_agent(ScriptedLlmService(list(script)), tools=[(tool, ["user"])], **kw)


def sources_in(components: list) -> list[SourcesComponent]:  # type: ignore[type-arg]
    return [c.rich_component for c in components if isinstance(c.rich_component, SourcesComponent)]


async def test_the_answer_cites_each_query_once_just_before_its_text(
    make_agent: Callable[..., Agent], shop: Path
) -> None:
    agent = sql_turn(
        make_agent,
        shop,
        ScriptedResponse.tools(("run_sql", {"sql": ORDERS}), ("run_sql", {"sql": ORDERS})),
        ScriptedResponse.tool("run_sql", {"sql": "SELECT nope FROM missing"}),
        "Acme has two orders.",
    )
    components = await collect(agent, "orders per customer?")
    [cited] = sources_in(components)
    [source] = cited.sources  # the same query twice is one source; the failed one is none
    assert (source.tool, source.query, source.tables, source.rows) == (
        "run_sql",
        ORDERS,
        ["orders", "customers"],
        3,
    )
    kinds = types_of(components)
    assert kinds.index("sources") < len(kinds) - 1 - kinds[::-1].index("text")
    assert components[-1].rich_component.type.value != "sources"
    assert (cited.asker_sees_queries, cited.queries_public) == (False, False)
    assert cited.summary() == "Sources: orders, customers · 1 query · 3 rows"
    simple = next(c for c in components if c.rich_component is cited).simple_component
    assert simple is not None and "SELECT" not in simple.text  # type: ignore[attr-defined]


async def test_an_answer_without_queries_cites_nothing(make_agent: Callable[..., Agent]) -> None:
    assert sources_in(await collect(make_agent(), "hi")) == []


async def test_who_may_see_the_sql_follows_the_tool_arguments_feature(
    make_agent: Callable[..., Agent], shop: Path
) -> None:
    script = (ScriptedResponse.tool("run_sql", {"sql": ORDERS}), "Done.")
    admin = sql_turn(make_agent, shop, *script, user=ADMIN)
    [cited] = sources_in(await collect(admin, "q"))
    assert (cited.asker_sees_queries, cited.queries_public) == (True, False)

    features = UiFeatures()
    features.register_feature("tool_arguments", [], private=False)
    open_to_all = sql_turn(
        make_agent, shop, *script, user=USER, config=AgentConfig(ui_features=features)
    )
    [cited] = sources_in(await collect(open_to_all, "q"))
    assert (cited.asker_sees_queries, cited.queries_public) == (True, True)


async def test_may_see_resolves_the_clicker_and_their_features(
    make_agent: Callable[..., Agent],
) -> None:
    from agent_core import RequestContext

    assert await make_agent(user=ADMIN).may_see(RequestContext(), "tool_arguments")
    assert not await make_agent(user=USER).may_see(RequestContext(), "tool_arguments")
    locked = make_agent(user=ADMIN, config=AgentConfig(allowed_groups=["finance"]))
    assert not await locked.may_see(RequestContext(), "tool_arguments")


@pytest.mark.parametrize(
    ("sql", "tables"),
    [
        ("SELECT * FROM shop.orders", ["shop.orders"]),
        ("WITH t AS (SELECT 1 AS x) SELECT * FROM t", []),
        (
            "SELECT * FROM a WHERE id IN (SELECT id FROM b) UNION ALL SELECT * FROM c",
            ["a", "b", "c"],
        ),
        ("SELECT 1", []),
        ("this is not SQL ((", []),
        ("", []),
    ],
)
def test_tables_are_read_from_the_query_as_written(sql: str, tables: list[str]) -> None:
    assert tables_in(sql) == tables
