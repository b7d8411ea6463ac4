"""The built-in agent on a warehouse whose roles and row-level-security policies decide who
sees what (issue 24), through the real Anthropic client and the shipped fake Messages API:
what the model learns, which memories are offered, who is refused, what the audit says."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_core.audit import AuditEventType, InMemoryAuditLogger
from agent_core.database.settings import DatabaseConfig
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.users import RequestContext, User, UserResolver
from bots.cli import main
from bots.database_agent import build_database_parts
from bots.demo.agent import DemoSettings, build_demo_agent
from tests.support.postgres_identity import BOT_PASSWORD, Warehouse

pytestmark = pytest.mark.postgres

PEOPLE = {
    "UANA": User(id="slack:T1:UANA", email="ana@example.com", group_memberships=["user", "sales"]),
    "UCFO": User(
        id="slack:T1:UCFO", email="cfo@example.com", group_memberships=["user", "finance"]
    ),
    "UEVE": User(
        id="slack:T1:UEVE", email="eve@example.com", group_memberships=["user", "marketing"]
    ),
}


class Directory(UserResolver):
    """The workspace as it is now: a person's groups may change between two questions."""

    def __init__(self) -> None:
        self.people = dict(PEOPLE)

    async def resolve_user(self, request_context: RequestContext) -> User:
        user = self.people[str(request_context.metadata["user_id"])]
        return user.model_copy(update={"metadata": {"workspace_id": "T1"}})


def asked_by(user_id: str) -> RequestContext:
    return RequestContext(
        metadata={
            "platform": "slack",
            "workspace_id": "T1",
            "channel_id": "C1",
            "thread_id": "1.0",
            "user_id": user_id,
        }
    )


@asynccontextmanager
async def served(
    warehouse: Warehouse, tmp_path: Path, directory: Directory
) -> AsyncIterator[tuple[Any, FakeAnthropic]]:
    """The built-in agent on the warehouse, talking to the fake Messages API."""
    async with FakeAnthropic() as fake:
        agent = built(warehouse, fake, tmp_path, directory)
        try:
            yield agent, fake
        finally:
            await agent.llm_service.aclose()


def built(warehouse: Warehouse, fake: FakeAnthropic, tmp_path: Path, directory: Directory) -> Any:
    config = DatabaseConfig(
        url=warehouse.url,
        roles={"finance": "finance_reader", "sales": "sales_reader"},
        unmapped="refuse",
    )
    agent = build_demo_agent(
        DemoSettings(
            data_dir=tmp_path,
            database=config,
            anthropic_api_key="sk-ant-test",  # type: ignore[arg-type]
            anthropic_base_url=fake.base_url,
            agent_memory=InMemoryAgentMemory(),
            user_resolver=directory,
        )
    )
    audit = InMemoryAuditLogger()
    agent.audit_logger = agent.tool_registry.audit_logger = audit
    agent.tool_registry.audit_config = agent.config.audit_config
    agent.llm_context_enhancer.source.started.wait(30)  # the start-up checks are done
    return agent


async def ask(agent: Any, user_id: str, question: str) -> str:
    parts = [
        c.model_dump(mode="json")
        async for c in agent.send_message(
            asked_by(user_id), question, conversation_id=f"thread-{user_id}"
        )
    ]
    return json.dumps(parts)


def sent(fake: FakeAnthropic, start: int = 0) -> str:
    return json.dumps([request.body for request in fake.requests[start:]])


async def test_each_asker_sees_their_rows_and_the_model_only_their_tables(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    directory = Directory()
    async with served(warehouse, tmp_path, directory) as (agent, fake):
        deals = "SELECT id, amount FROM deals ORDER BY id"
        fake.queue(Reply.tool("run_sql", {"sql": deals}), Reply.text("Your deals."))
        answer = await ask(agent, "UANA", "what are my deals, and what do we pay people?")
        ana_saw = sent(fake)
        assert "salaries" not in ana_saw.lower() and "Pay of every employee" not in ana_saw
        assert '"card"' not in ana_saw and "customers" in ana_saw  # columns granted only
        assert "ben@example.com" not in ana_saw and '"7"' not in answer

        fake.queue(Reply.tool("run_sql", {"sql": deals}), Reply.text("All deals."))
        before = len(fake.requests)
        await ask(agent, "UCFO", "what are the deals, and what do we pay people?")
        cfo_saw = sent(fake, before)
        assert "salaries" in cfo_saw and "Pay of every employee" in cfo_saw

        results = agent.audit_logger.of_type(AuditEventType.TOOL_RESULT)
        assert [e.details["data_identity"] for e in results] == [
            "role 'sales_reader'",
            "role 'finance_reader'",
        ]
        assert [e.user_email for e in results] == ["ana@example.com", "cfo@example.com"]


async def test_a_memory_made_as_one_role_is_not_offered_to_another(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    directory = Directory()
    async with served(warehouse, tmp_path, directory) as (agent, fake):
        sql = "SELECT sum(amount) FROM deals"
        fake.queue(Reply.tool("run_sql", {"sql": sql}), Reply.text("150."))
        await ask(agent, "UANA", "total deal amount")
        memory = agent.agent_memory
        contexts = {}
        for who in ("UANA", "UCFO"):
            user = await agent.user_resolver.resolve_user(asked_by(who))
            contexts[who] = agent.tool_context(
                user, conversation_id=f"thread-{who}", request_id="r", request={}
            )
        mine = await memory.get_recent_memories(contexts["UANA"])
        assert [m.args for m in mine] == [{"sql": sql}]
        await memory.rate_turn(contexts["UANA"], mine[0].turn_id or "", good=True)
        # verified by its owner: offered to the whole scope, yet never to another role
        assert await memory.get_recent_memories(contexts["UCFO"]) == []
        found = await memory.search_similar_usage("total deal amount", contexts["UCFO"])
        assert found == []


async def test_an_unmapped_person_gets_one_sentence_and_nothing_runs(
    warehouse: Warehouse, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = Directory()
    async with served(warehouse, tmp_path, directory) as (agent, fake):
        caplog.set_level(logging.INFO)
        answer = await ask(agent, "UEVE", "what are the deals?")
        assert "You have no data access here" in answer
        assert fake.requests == []  # no LLM call, no query
    [refusal] = [r for r in caplog.records if "You have no data access" in r.getMessage()]
    assert refusal.levelno == logging.INFO and refusal.exc_info is None  # the bot's job


async def test_the_next_question_runs_as_the_new_identity_when_groups_change(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    directory = Directory()
    count = "SELECT count(*) AS n FROM deals"
    async with served(warehouse, tmp_path, directory) as (agent, fake):
        fake.queue(Reply.tool("run_sql", {"sql": count}), Reply.text("2."))
        await ask(agent, "UANA", "how many deals?")
        directory.people["UANA"] = PEOPLE["UANA"].model_copy(
            update={"group_memberships": ["user", "finance"]}
        )
        fake.queue(Reply.tool("run_sql", {"sql": count}), Reply.text("3."))
        await ask(agent, "UANA", "and now?")
        last = fake.requests[-1].body["messages"][-1]["content"][0]["content"]
        assert last.endswith("n\n3")
        audit = agent.audit_logger.of_type(AuditEventType.TOOL_RESULT)
        assert [e.details["data_identity"] for e in audit] == [
            "role 'sales_reader'",
            "role 'finance_reader'",
        ]


def test_doctor_config_and_the_start_up_log_check_each_mapped_identity(
    warehouse: Warehouse,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 24 item 4: the start-up log and doctor list each mapped role (exists, can be
    taken, could write, sees a table) and each profile's own database; config shows them,
    passwords masked."""

    for name in [n for n in os.environ if n.startswith(("THREADLINE_", "REDIS"))]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "threadline.toml").write_text(
        f'[database]\nurl = "{warehouse.url}"\nunmapped = "refuse"\n'
        '[database.roles]\nfinance = "finance_reader"\nsales = "ghost_role"\n'
        'ops = "writer_role"\n'
        '[[profiles]]\nname = "fin"\nslack_channels = ["CFIN"]\n'
        f'database = {{ url = "{warehouse.url}", roles = {{ finance = "finance_reader" }} }}\n',
        encoding="utf-8",
    )
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "database" in line]
    assert any(line.startswith("✓ database role 'finance_reader': reads") for line in lines)
    assert any(
        line.startswith("✗ database role 'ghost_role'") and "does not exist" in line
        for line in lines
    )
    assert any(line.startswith("! database role 'writer_role'") for line in lines)
    assert any(line.startswith("✓ database (fin) role 'finance_reader'") for line in lines)
    assert BOT_PASSWORD not in out

    assert main(["config"]) == 0
    shown = capsys.readouterr().out
    assert "profiles.fin.database.url" in shown and BOT_PASSWORD not in shown
    assert "database.roles" in shown and "ghost_role" in shown

    caplog.set_level(logging.INFO)
    config = DatabaseConfig(url=warehouse.url, roles={"sales": "ghost_role"})
    parts = build_database_parts(config, data_dir=tmp_path, memory=InMemoryAgentMemory())
    assert parts.access.started.wait(30)
    [line] = [r for r in caplog.records if "ghost_role" in r.getMessage()]
    assert line.levelno == logging.ERROR and "does not exist" in line.getMessage()


@pytest.mark.parametrize(("asker", "deals"), [("ana@example.com,sales", 2), ("finance", 3)])
async def test_eval_asks_as_a_chosen_person_and_group(
    warehouse: Warehouse,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    asker: str,
    deals: int,
) -> None:
    """``threadline eval --as``: the agent's query and the expected SQL both run as the
    asker's data identity, so a team sees what each role gets before rollout."""
    import asyncio

    from bots import eval as eval_command
    from bots.cli import build_parser

    questions = tmp_path / "q.jsonl"
    count = "SELECT count(*) FROM deals"
    questions.write_text(json.dumps({"question": "How many deals?", "expected": deals}) + "\n")
    (tmp_path / "threadline.toml").write_text(
        f'[database]\nurl = "{warehouse.url}"\nunmapped = "refuse"\n'
        '[database.roles]\nfinance = "finance_reader"\nsales = "sales_reader"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    async with FakeAnthropic() as fake:
        fake.queue(Reply.tool("run_sql", {"sql": count}), Reply.text(f"{deals}."))
        for name, value in {
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": fake.base_url,
        }.items():
            monkeypatch.setenv(name, value)
        args = build_parser().parse_args(
            ["eval", str(questions), "--as", asker, "--data-dir", str(tmp_path)]
        )
        assert await asyncio.to_thread(eval_command.run, args) == 0
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["passed"] == 1, out


async def test_status_shows_admins_the_mapping(warehouse: Warehouse, tmp_path: Path) -> None:
    directory = Directory()
    directory.people["UADM"] = User(
        id="slack:T1:UADM", email="adm@example.com", group_memberships=["user", "admin"]
    )
    async with served(warehouse, tmp_path, directory) as (agent, fake):
        shown = await ask(agent, "UADM", "/status")
        assert "`finance` -> role `finance_reader`" in shown
        assert "`sales` -> role `sales_reader`" in shown and "anyone else: refuse" in shown
        assert BOT_PASSWORD not in shown and fake.requests == []
