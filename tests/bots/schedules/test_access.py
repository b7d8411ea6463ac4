"""``OwnerAccess``: the owner resolved again at run time, through the agent serving the place:
its resolver, its allowed groups, and its database tool's access groups."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    RequestContext,
    ScriptedLlmService,
    ToolRegistry,
)
from agent_core.config import AgentConfig
from agent_core.database import SqlAlchemyRunner
from agent_core.tools.sql import RunSqlTool, SqlError
from bots.profiles import Profile, ProfileRouter
from bots.schedules.access import OwnerAccess
from tests.bots.schedules.support import Directory


@pytest.fixture
def shop(tmp_path: Path) -> SqlAlchemyRunner:
    path = tmp_path / "shop.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1), (2);")
    db.close()
    return SqlAlchemyRunner.sqlite(path)


def agent(directory: Directory, runner: SqlAlchemyRunner, **config: object) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(RunSqlTool(runner), access_groups=["analysts"])
    return Agent(
        llm_service=ScriptedLlmService([]),
        tool_registry=registry,
        user_resolver=directory,
        agent_memory=InMemoryAgentMemory(),
        config=AgentConfig(**config),  # type: ignore[arg-type]
    )


HERE = RequestContext(metadata={"platform": "slack", "user_id": "U1", "channel_id": "C1"})


async def test_the_owner_is_resolved_again_with_todays_groups(shop: SqlAlchemyRunner) -> None:
    directory = Directory()
    access = OwnerAccess(agent(directory, shop))
    check = await access.check(HERE)
    assert check.standing == "active" and check.user is not None
    result = await access.query(HERE, check.user, "SELECT count(*) AS n FROM orders")
    assert result.rows == [[2]]
    assert "CREATE TABLE orders" in await access.schema(HERE, check.user)

    directory.groups["U1"] = ["user"]  # no longer an analyst: the database tool is gone
    check = await access.check(HERE)
    assert check.standing == "active" and check.user is not None
    with pytest.raises(SqlError, match="no longer query"):
        await access.query(HERE, check.user, "SELECT 1")

    del directory.groups["U1"]  # the resolver refuses them altogether
    check = await access.check(HERE)
    assert check.standing == "no_access" and "verified Slack user" in check.reason


async def test_allowed_groups_of_the_profile_serving_the_place(shop: SqlAlchemyRunner) -> None:
    directory = Directory()
    default = agent(directory, shop)
    finance = agent(directory, shop, allowed_groups=["finance"])
    router = ProfileRouter(
        default, [Profile(name="finance", slack_channels=["C9"])], {"finance": finance}
    )
    access = OwnerAccess(router)
    assert (await access.check(HERE)).standing == "active"
    there = RequestContext(metadata={**HERE.metadata, "channel_id": "C9"})
    check = await access.check(there)
    assert check.standing == "no_access" and "no longer ask there" in check.reason
    directory.groups["U1"].append("finance")
    assert (await access.check(there)).standing == "active"


async def test_an_alert_query_cannot_write(shop: SqlAlchemyRunner) -> None:
    access = OwnerAccess(agent(Directory(), shop))
    owner = (await access.check(HERE)).user
    assert owner is not None
    with pytest.raises(SqlError) as refused:
        await access.query(HERE, owner, "DELETE FROM orders")
    assert refused.value.reason == "read_only"
    assert (await access.query(HERE, owner, "SELECT count(*) FROM orders")).rows == [[2]]


async def test_queries_run_as_the_owners_data_identity_never_the_databases_own(
    tmp_path: Path,
) -> None:
    """Regression: an alert's query ran through the tool's own runner (the database's own
    user, or the unmapped rule), not the owner's data identity."""
    from agent_core.database.access import DataAccess
    from agent_core.database.settings import DatabaseConfig

    def database(name: str, orders: int) -> str:
        path = tmp_path / f"{name}.db"
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE orders (id INTEGER)")
        db.executemany("INSERT INTO orders VALUES (?)", [(i,) for i in range(orders)])
        db.commit()
        db.close()
        return f"sqlite:///{path}"

    config = DatabaseConfig(
        url=database("everything", 2), urls={"analysts": database("analysts", 5)}, unmapped="refuse"
    )
    registry = ToolRegistry()
    registry.register_local_tool(RunSqlTool(DataAccess(config)), access_groups=[])
    directory = Directory()
    access = OwnerAccess(
        Agent(
            llm_service=ScriptedLlmService([]),
            tool_registry=registry,
            user_resolver=directory,
            agent_memory=InMemoryAgentMemory(),
        )
    )
    check = await access.check(HERE)
    assert check.standing == "active" and check.user is not None
    assert (await access.query(HERE, check.user, "SELECT count(*) FROM orders")).rows == [[5]]

    directory.groups["U1"] = ["user"]  # out of the mapped group: the database refuses them
    check = await access.check(HERE)
    assert check.standing == "no_access" and "no longer have data access" in check.reason
    assert check.user is not None
    with pytest.raises(SqlError, match="no data access"):
        await access.query(HERE, check.user, "SELECT count(*) FROM orders")
    with pytest.raises(SqlError, match="no data access"):
        await access.schema(HERE, check.user)
