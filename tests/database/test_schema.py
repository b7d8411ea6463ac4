"""Schema awareness: the catalog indexed, the relevant tables chosen within a budget, the
training folder, the cache, and the unreachable-database policy, seen through the prompt."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from agent_core.context import ToolContext
from agent_core.database.catalog import Catalog, ColumnInfo, TableInfo, render_table
from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_index import SchemaIndex
from agent_core.database.schema_source import SchemaSource
from agent_core.database.training import Training, load_training, parse_examples
from agent_core.extensions.enhancer import LlmContextEnhancer
from agent_core.users import User


def _table(
    name: str, columns: list[str], comment: str | None = None, references: list[str] | None = None
) -> TableInfo:
    table = TableInfo(
        name=name,
        comment=comment,
        ddl="",
        references=references or [],
        columns=[ColumnInfo(name=c, type="TEXT") for c in columns],
    )
    table.ddl = render_table(table, lambda name: name)
    return table


def _big_catalog() -> Catalog:
    filler = [_table(f"log_{n:04d}", ["id", "payload", f"field_{n}"]) for n in range(600)]
    return Catalog(
        backend="postgresql",
        tables=[
            *filler,
            _table("cst_master", ["cst_id", "full_name", "email"], "Customers: people who buy"),
            _table(
                "inv_hdr",
                ["inv_id", "cst_id", "amount", "issued_on"],
                "Invoices sent to customers",
                references=["cst_master"],
            ),
            _table("wh_stock", ["sku", "on_hand", "warehouse"], "Inventory per warehouse"),
        ],
    )


def context(conversation: str = "c1") -> ToolContext:
    return ToolContext(user=User(id="ana"), conversation_id=conversation, request_id="r1")


def test_retrieval_finds_tables_named_indirectly_within_the_budget() -> None:
    catalog = _big_catalog()
    index = SchemaIndex(catalog)
    chosen = index.select("How much have our clients been invoiced?", max_tokens=400)
    names = [table.name for table in chosen.tables]
    assert names[0] == "inv_hdr" and "cst_master" in names  # the join it needs comes along
    assert chosen.tokens <= 400 + 60  # the budget, plus the heading line
    assert not chosen.whole and chosen.total_tables == 603
    assert "most relevant to this question" in chosen.render()
    stock = index.select("how many items are on hand in each warehouse", max_tokens=400)
    assert stock.tables[0].name == "wh_stock"


def test_a_small_catalog_is_sent_whole() -> None:
    catalog = Catalog(backend="sqlite", tables=[_table("a", ["x"]), _table("b", ["y"])])
    chosen = SchemaIndex(catalog).select("anything at all")
    assert chosen.whole and [t.name for t in chosen.tables] == ["a", "b"]
    assert chosen.render().startswith("All 2 tables of the database:")


def test_training_examples_teach_which_table_answers_a_question(tmp_path: Path) -> None:
    (tmp_path / "examples.sql").write_text(
        "-- Which accounts churned last quarter?\n"
        "SELECT * FROM log_0042 WHERE payload = 'closed';\n"
        "-- How many people bought twice?\nSELECT count(*)\nFROM cst_master;\n"
    )
    (tmp_path / "glossary.md").write_text("Churn means an account closed its contract.\n")
    training = load_training(tmp_path)
    assert [e.question for e in training.examples] == [
        "Which accounts churned last quarter?",
        "How many people bought twice?",
    ]
    index = SchemaIndex(_big_catalog(), training)
    chosen = index.select("accounts that churned", max_tokens=600)
    assert chosen.tables[0].name == "log_0042"
    assert chosen.examples[0].sql.startswith("SELECT * FROM log_0042")
    assert chosen.notes[0].text.startswith("Churn means")
    assert "Verified examples" in chosen.render() and "Documentation:" in chosen.render()


def test_examples_without_a_question_or_sql_are_skipped() -> None:
    assert parse_examples("SELECT 1;\n-- only a question\n", "x.sql") == []


class _Inner(LlmContextEnhancer):
    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        return system_prompt + "\n(memory)"


async def test_the_enhancer_keeps_the_last_turns_tables_for_a_follow_up(tmp_path: Path) -> None:
    source = SchemaSource(SqlAlchemyRunner.sqlite(tmp_path / "unused.db"))
    source._index = SchemaIndex(_big_catalog())  # as after an introspection
    source._loaded_at = source._clock()
    enhancer = SchemaContextEnhancer(source, inner=_Inner(), max_tokens=400)
    first = await enhancer.enhance_system_prompt_for(context(), "You help.", "stock per warehouse")
    assert first.startswith("You help.\n(memory)\n\n## Database schema\n\nDialect: SQLite.")
    assert "CREATE TABLE wh_stock" in first
    follow_up = await enhancer.enhance_system_prompt_for(
        context(), "You help.", "and the invoices of clients?"
    )
    assert "CREATE TABLE inv_hdr" in follow_up and "CREATE TABLE wh_stock" in follow_up
    other = await enhancer.enhance_system_prompt_for(
        context("c2"), "You help.", "and the invoices of clients?"
    )
    assert "CREATE TABLE wh_stock" not in other  # another conversation starts afresh


def _make_shop(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE "order" ("select" INTEGER, "größe" TEXT)')
    db.close()


async def test_an_unreachable_database_is_said_in_the_prompt_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Start anyway; each turn's prompt tells the model the database is unreachable; the
    next turn after ``retry_every`` finds it back without a restart."""
    now = [0.0]
    database = tmp_path / "later.db"
    source = SchemaSource(
        SqlAlchemyRunner.sqlite(database),
        cache_path=tmp_path / "cache" / "schema.json",
        retry_every=30,
        clock=lambda: now[0],
    )
    caplog.set_level(logging.INFO)
    source.start()
    assert await asyncio.to_thread(source.started.wait, 10)
    assert "UNREACHABLE" in caplog.text and "starts anyway" in caplog.text

    enhancer = SchemaContextEnhancer(source)
    down = await enhancer.enhance_system_prompt_for(context(), "P", "orders?")
    assert "could not be reached" in down and "try again later" in down

    _make_shop(database)
    still = await enhancer.enhance_system_prompt_for(context(), "P", "orders?")
    assert "could not be reached" in still  # not retried before retry_every
    now[0] += 31
    back = await enhancer.enhance_system_prompt_for(context(), "P", "orders?")
    assert 'CREATE TABLE "order" (\n  "select" INTEGER,\n  "größe" TEXT\n);' in back
    assert (tmp_path / "cache" / "schema.json").is_file()

    restarted = SchemaSource(
        SqlAlchemyRunner.sqlite(tmp_path / "gone.db"), cache_path=tmp_path / "cache" / "schema.json"
    )
    assert restarted.load_cache()  # a restart starts from the cache, before introspecting
    index = await restarted.current()
    assert index is not None and [t.name for t in index.catalog.tables] == ["order"]


async def test_start_up_logs_that_the_file_is_read_only(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _make_shop(tmp_path / "shop.db")
    caplog.set_level(logging.INFO)
    source = SchemaSource(SqlAlchemyRunner.sqlite(tmp_path / "shop.db"))
    source.start()
    assert await asyncio.to_thread(source.started.wait, 10)
    assert "reachable; read-only by construction: the file is opened read-only" in caplog.text
    assert source.index is not None and source.error is None
    assert Training() == source.training()
