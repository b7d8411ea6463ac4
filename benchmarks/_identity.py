"""The identity case of ``query_overhead.py`` (issue 24): what running each query as the
asker's PostgreSQL role costs, and what the model is shown per role at 2,000 tables.

Per query: the same runner on the same pooled connections, without and with a data
identity (``set_config('role' | 'threadline.user_id' | 'threadline.email' |
'threadline.groups', ..., true)`` in the transaction's first statement), rounds alternating.

Per role: the 2,000-table catalog of ``schema_retrieval.py`` created in a real database,
introspected once, then filtered for a role granted half the branches (``RoleViews``:
``has_table_privilege`` as that role); questions about visible tables are asked of the full
index and of the role's, the same questions in the same run.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from typing import Any

from agent_core.database.catalog import Catalog
from agent_core.database.identity import DataIdentity
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_index import DEFAULT_MAX_TOKENS, SchemaIndex
from agent_core.database.schema_source import SchemaSource
from agent_core.database.visibility import RoleViews
from benchmarks.schema_retrieval import BRANCHES, KINDS, build_catalog

LOGIN, ROLE = "bench_login", "bench_role"
IDENTITY = DataIdentity(
    role=ROLE, user_id="slack:T1:U1", email="ana@example.com", groups=("user", "sales")
)
VISIBLE_BRANCHES = 50


def setup_roles(connection: Any) -> None:
    """A login that may only read, and a role it may become (run as the superuser)."""
    for statement in (
        f"DROP ROLE IF EXISTS {ROLE}",
        f"DROP ROLE IF EXISTS {LOGIN}",
        f"CREATE ROLE {LOGIN} LOGIN NOINHERIT",
        f"CREATE ROLE {ROLE} NOLOGIN",
        f"GRANT {ROLE} TO {LOGIN}",
    ):
        connection.execute(statement)


async def identity_timings(url: str, query: str, runs: int) -> tuple[list[float], list[float]]:
    """(without, with) a data identity: the same runner, the same pool, rounds alternating."""
    plain = SqlAlchemyRunner(url)
    asker = plain.as_identity(IDENTITY)
    await plain.run_sql(query)
    await asker.run_sql(query)
    without, with_identity = [], []
    for _ in range(runs):
        for runner, samples in ((plain, without), (asker, with_identity)):
            started = time.perf_counter()
            await runner.run_sql(query)
            samples.append(time.perf_counter() - started)
    return without, with_identity


def create_catalog(connection: Any, catalog: Catalog) -> None:
    """The catalog's tables, their comments, and the role's grants on half the branches."""
    statements = ["CREATE SCHEMA IF NOT EXISTS public"]
    for number, table in enumerate(catalog.tables):
        columns = ", ".join(f"{column.name} text" for column in table.columns)
        statements.append(f"CREATE TABLE {table.name} ({columns})")
        statements.append(f"COMMENT ON TABLE {table.name} IS '{table.comment}'")
        if number // (len(catalog.tables) // 100) < VISIBLE_BRANCHES:
            statements.append(f"GRANT SELECT ON {table.name} TO {ROLE}")
    connection.execute("; ".join(statements))


async def role_schema(url: str, kinds: int, questions: int) -> dict[str, Any]:
    """Tokens and hits of the full index and of the role's, the same questions."""
    runner = SqlAlchemyRunner(url)
    base = await SchemaSource(runner).refresh()
    started = time.perf_counter()
    role_index = await RoleViews(runner).index(base, ROLE)
    filter_s = time.perf_counter() - started
    rng = random.Random(24)
    asked = []
    for _ in range(questions):
        number = rng.randrange(VISIBLE_BRANCHES)
        abbreviation, _, _, texts = KINDS[rng.randrange(kinds)]
        asked.append(
            (rng.choice(texts).format(b=BRANCHES[number]), f"b{number:03d}_{abbreviation}")
        )
    figures: dict[str, Any] = {
        "role_tables": len(role_index.tables),
        "role_filter_s": round(filter_s, 3),
    }
    for label, index in (("all", base), ("role", role_index)):
        figures |= _retrieval(label, index, asked)
    return figures


def _retrieval(label: str, index: SchemaIndex, asked: list[tuple[str, str]]) -> dict[str, Any]:
    tokens, hits = [], 0
    for question, target in asked:
        chosen = index.select(question, max_tokens=DEFAULT_MAX_TOKENS)
        tokens.append(chosen.tokens)
        hits += target in {table.name for table in chosen.tables}
    return {
        f"{label}_schema_tokens_median": int(statistics.median(tokens)),
        f"{label}_hit_rate": round(hits / len(asked), 4),
    }


def run_role_schema(url: str, kinds: int, questions: int) -> dict[str, Any]:
    return asyncio.run(role_schema(url, kinds, questions))


__all__ = [
    "IDENTITY",
    "LOGIN",
    "ROLE",
    "build_catalog",
    "create_catalog",
    "identity_timings",
    "run_role_schema",
    "setup_roles",
]
