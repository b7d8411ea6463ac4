"""The commands on your database (issue 14): ``THREADLINE_DATABASE_URL`` through the built-in
agent, ``threadline train`` and ``threadline eval`` (on the fake Messages API), against the
real PostgreSQL shop."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

import pytest

from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.database.settings import DatabaseConfig
from agent_core.database.urls import DatabaseConfigError
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.users import RequestContext
from bots import eval as eval_command
from bots import train as train_command
from bots.cli import build_parser, main
from bots.database_agent import build_database_parts
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.serving import load_config
from tests.support.postgres_shop import OWNER_PASSWORD, READER_PASSWORD, Shop

pytestmark = pytest.mark.postgres


def test_the_url_is_read_from_the_environment_and_never_shown(
    pg_shop: Shop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", pg_shop.owner_url)
    config = load_config(argparse.Namespace(command="dev"))
    assert config.database.url == pg_shop.owner_url
    assert main(["config"]) == 0
    shown = capsys.readouterr().out
    assert "environment THREADLINE_DATABASE_URL" in shown and OWNER_PASSWORD not in shown


async def test_the_built_in_agent_answers_from_your_database(
    pg_shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    agent = build_demo_agent(
        DemoSettings(
            data_dir=tmp_path,
            database_url=pg_shop.owner_url,  # type: ignore[arg-type]
            use_scripted_model=True,
        )
    )
    enhancer = agent.llm_context_enhancer
    assert isinstance(enhancer, SchemaContextEnhancer)
    assert await asyncio.to_thread(enhancer.source.started.wait, 20)
    # the owner can write: the start-up log says so loudly, without the password
    assert "WARNING: the database user can write" in caplog.text
    assert OWNER_PASSWORD not in caplog.text
    components = [c async for c in agent.send_message(RequestContext(), "")]
    welcome = json.dumps([c.model_dump(mode="json") for c in components])
    assert "PostgreSQL database" in welcome and "owner:***@" in welcome
    assert OWNER_PASSWORD not in welcome
    tool = agent.tool_registry.peek("run_sql")
    assert tool is not None and "PostgreSQL" in tool.description


def test_train_and_eval_are_threadline_subcommands() -> None:
    parser = build_parser()
    assert parser.parse_args(["train", "--training-dir", "x"]).module == "bots.train"
    assert parser.parse_args(["eval", "questions.jsonl"]).file == Path("questions.jsonl")


def test_train_reads_the_schema_and_the_training_folder(
    pg_shop: Shop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "training"
    folder.mkdir()
    (folder / "examples.sql").write_text(
        "-- paid revenue per customer\n"
        "SELECT c.name, sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id "
        "WHERE o.status = 'paid' GROUP BY 1;\n"
    )
    (folder / "rules.md").write_text("Revenue counts paid orders only.\n")
    args = build_parser().parse_args(
        [
            "train",
            "--database-url",
            pg_shop.reader_url,
            "--training-dir",
            str(folder),
            "--data-dir",
            str(tmp_path / "data"),
        ]
    )
    assert train_command.run(args) == 0
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["tables"] == 4 and summary["examples"] == 1 and summary["notes"] == 1
    assert summary["write_access"] == "read_only"
    assert Path(summary["cache"]).is_file()
    assert READER_PASSWORD not in out and "reader:***@" in out


def test_train_without_a_database_says_how_to_set_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("THREADLINE_DATABASE_URL", raising=False)
    args = build_parser().parse_args(["train", "--data-dir", str(tmp_path)])
    assert train_command.run(args) == 2
    assert "THREADLINE_DATABASE_URL" in capsys.readouterr().err


PAID = (
    "SELECT c.name, sum(o.total) AS revenue FROM customers c JOIN orders o "
    "ON o.customer_id = c.id WHERE o.status = 'paid' GROUP BY c.name"
)

WITH_COUNTRY = PAID.replace("c.name,", "c.name, c.country,") + ", c.country ORDER BY 3"


async def test_eval_reports_accuracy_sql_tokens_and_a_json_line(
    pg_shop: Shop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "\n".join(
            json.dumps(case)
            for case in [
                {"question": "Paid revenue per customer?", "expected_sql": PAID},
                {"question": "How many orders were cancelled?", "expected": 6},
                {"question": "How many customers are there?", "expected": 3},
            ]
        )
        + "\n"
    )
    async with FakeAnthropic() as fake:
        fake.queue(
            # 1: right, with an extra column and another order of rows
            Reply.tool("run_sql", {"sql": WITH_COUNTRY}),
            Reply.text("Acme leads."),
            # 2: wrong: counts every order
            Reply.tool("run_sql", {"sql": "SELECT count(*) FROM orders"}),
            Reply.text("60."),
            # 3: a refused write first, then the right count
            Reply.tool("run_sql", {"sql": "DELETE FROM customers"}),
            Reply.tool("run_sql", {"sql": "SELECT count(*) FROM customers"}),
            Reply.text("3."),
        )
        for name, value in {
            "THREADLINE_DATABASE_URL": pg_shop.reader_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_MODEL": "claude-test-model",
        }.items():
            monkeypatch.setenv(name, value)
        args = build_parser().parse_args(
            ["eval", str(questions), "--data-dir", str(tmp_path), "--min-accuracy", "0.9"]
        )
        code = await asyncio.to_thread(eval_command.run, args)
    out = capsys.readouterr().out
    assert code == 1  # 2 of 3 is below --min-accuracy 0.9
    lines = out.strip().splitlines()
    report = json.loads(lines[-1])
    assert (report["questions"], report["passed"]) == (3, 2), out
    assert report["execution_accuracy"] == pytest.approx(0.6667)
    assert report["model"] == "claude-test-model" and "reader:***@" in report["database"]
    assert report["input_tokens"] == 12 * 7 and report["output_tokens"] == 7 * 7
    assert report["failed"] == ["How many orders were cancelled?"]
    assert any(line.startswith("PASS  1/3  Paid revenue per customer?") for line in lines)
    assert any(line.startswith("FAIL  2/3") for line in lines)
    assert "      SQL: SELECT count(*) FROM orders" in lines
    assert "      expected [[6]], got [[60]]" in lines
    assert "Execution accuracy: 2/3 (66.7%)" in out
    assert READER_PASSWORD not in out
    assert pg_shop.count("customers") == 3


def test_eval_without_a_file_runs_the_demo_shops_starter_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("THREADLINE_DATABASE_URL", raising=False)
    args = build_parser().parse_args(["eval", "--scripted", "--data-dir", str(tmp_path)])
    assert eval_command.run(args) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["file"].endswith("eval_demo_shop.jsonl")
    assert (report["questions"], report["execution_accuracy"]) == (5, 1.0)


def test_eval_files_must_say_what_a_right_answer_is(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no expectation"}\n')
    with pytest.raises(SystemExit) as stopped:
        eval_command.load_cases(bad)
    assert "bad.jsonl:1" in str(stopped.value)


def test_a_url_whose_driver_is_missing_stops_the_command_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", "snowflake://me:Sn0wSecret@acct/db/public")
    assert main(["eval", "--data-dir", str(tmp_path)]) == 2
    assert main(["train", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("pip install 'threadline[snowflake]'") == 2
    assert "Sn0wSecret" not in err and "me:***@" in err


def test_a_superuser_database_refuses_to_start(pg_shop: Shop, tmp_path: Path) -> None:
    """Issue 22 item 2: the bot does not start on a database whose user escapes the
    read-only transaction; the command says why (``threadline slack | teams | dev`` exit 2
    with the message); the loud sandbox opt-out starts."""
    superuser = DatabaseConfig(url=pg_shop.server.url(database=pg_shop.database))
    with pytest.raises(DatabaseConfigError) as refused:
        build_database_parts(superuser, data_dir=tmp_path, memory=InMemoryAgentMemory())
    assert "superuser" in str(refused.value) and "postgres:***@" in str(refused.value)
    sandbox = superuser.model_copy(update={"allow_privileged_user": True})
    parts = build_database_parts(sandbox, data_dir=tmp_path, memory=InMemoryAgentMemory())
    assert parts.access.started.wait(30)
