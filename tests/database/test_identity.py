"""The data identity: one function maps a resolved person to who their queries run as, with
the precedence the README documents; other dialects get a URL per group (real SQLite files
here), Snowflake a role per connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_core.database.access import DataAccess, role_url
from agent_core.database.identity import NoDataAccess, data_identity
from agent_core.database.settings import DatabaseConfig, DatabaseSettings
from agent_core.settings import ConfigError, load_sections
from agent_core.users import User

URL = "postgresql://bot@db/dw"


def person(*groups: str, email: str = "ana@example.com") -> User:
    return User(id="slack:T1:UANA", email=email, group_memberships=list(groups))


def test_a_persons_own_entry_wins_then_the_first_group_in_the_tables_order() -> None:
    config = DatabaseConfig(
        url=URL,
        roles={"sales": "sales_reader", "user:ana@example.com": "ana_role", "finance": "fin"},
    )
    assert data_identity(person("finance", "sales"), config).role == "ana_role"
    other = person("finance", "sales", email="bo@example.com")
    assert data_identity(other, config).role == "sales_reader"  # the table's order, not theirs
    by_id = DatabaseConfig(url=URL, roles={"user:UANA": "by_platform_id"})
    assert data_identity(person(), by_id).role == "by_platform_id"
    by_email = DatabaseConfig(url=URL, roles={"user:Ana@Example.com": "any_case"})
    assert data_identity(person(), by_email).role == "any_case"


def test_urls_and_roles_compose_and_unmapped_people_follow_the_rule() -> None:
    config = DatabaseConfig(
        url=URL,
        urls={"emea": "postgresql://bot@emea-db/dw"},
        roles={"finance": "fin"},
    )
    both = data_identity(person("finance", "emea"), config)
    assert (both.url_name, both.role, both.key) == ("emea", "fin", "default/emea/fin")
    assert data_identity(person("marketing"), config).is_default
    refusing = config.model_copy(update={"unmapped": "refuse"})
    with pytest.raises(NoDataAccess):
        data_identity(person("marketing"), refusing)


@given(
    groups=st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
    order=st.permutations(["a", "b", "c"]),
)
def test_the_identity_depends_on_the_configuration_order_not_the_workspaces(
    groups: list[str], order: list[str]
) -> None:
    config = DatabaseConfig(url=URL, roles={group: f"role_{group}" for group in order})
    forward = data_identity(person(*groups), config)
    backward = data_identity(person(*reversed(groups)), config)
    assert forward == backward.model_copy(update={"groups": forward.groups})
    first = next((group for group in order if group in groups), None)
    assert forward.role == (f"role_{first}" if first else None)


def test_the_settings_carry_the_person_as_values() -> None:
    identity = data_identity(person("sales", 'we"ird'), DatabaseConfig(url=URL))
    settings = identity.settings()
    assert settings["threadline.email"] == "ana@example.com"
    assert settings["threadline.groups"] == '["sales", "we\\"ird"]'


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[database]\nurl = "mysql://u@h/db"\n[database.roles]\nsales = "r"\n', "needs PostgreSQL"),
        ('[database]\nurl = "postgresql://u@h/db"\nunmapped = "refuse"\n', "nobody could ask"),
        ('[database]\nurl = "sqlite:///x.db"\n[database.urls]\nsales = "not a url"\n', "urls"),
    ],
)
def test_a_mapping_that_cannot_work_is_a_configuration_problem(
    tmp_path: Path, table: str, problem: str
) -> None:
    file = tmp_path / "threadline.toml"
    file.write_text(table)
    with pytest.raises(ConfigError) as refused:
        load_sections([DatabaseSettings], file=file)
    assert problem in str(refused.value)


def test_snowflake_roles_are_connection_parameters_never_sql() -> None:
    url = role_url("snowflake://svc:pw@acct/db/public", "ANALYST'; DROP TABLE x; --")
    assert url.query["role"] == "ANALYST'; DROP TABLE x; --"
    assert "DROP" not in url.render_as_string(hide_password=True).split("?")[0]


def _shop(path: Path, region: str) -> str:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sales (region TEXT, amount REAL)")
        db.execute("INSERT INTO sales VALUES (?, 10)", (region,))
        if region == "EU":
            db.execute("CREATE TABLE eu_only (x INTEGER)")
    return f"sqlite:///{path}"


async def test_other_dialects_run_each_group_on_its_own_url_with_its_own_schema(
    tmp_path: Path,
) -> None:
    eu, us = _shop(tmp_path / "eu.db", "EU"), _shop(tmp_path / "us.db", "US")
    access = DataAccess(DatabaseConfig(url=us, urls={"emea": eu}, unmapped="default"))
    emea, americas = person("emea"), person("sales")
    assert (await access.for_user(emea).run_sql("SELECT region FROM sales")).rows == [["EU"]]
    assert (await access.for_user(americas).run_sql("SELECT region FROM sales")).rows == [["US"]]
    assert "eu_only" in await access.for_user(emea).describe()
    assert "eu_only" not in await access.for_user(americas).describe()
    assert access.for_user(emea).identity_label == "url 'emea'"
    assert "emea" in "\n".join(access.mapping_lines()) and "eu.db" in access.mapping_lines()[1]
