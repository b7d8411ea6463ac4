"""What a turn leaves in the hash-chained audit trail (``TrailAuditLogger`` over the SQLite
store): the question (its text only when configured), the tool call with its secrets
redacted, the answer; a refusal and a budget stop; a command answered without the model.
The person is a pseudonym in every record and named in the directory only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agent_core import Agent, AgentConfig, ScriptedLlmService, ScriptedResponse
from agent_core.audit_chain import AuditRecord
from agent_core.audit_trail import JsonlForwarder, TrailAuditLogger
from agent_core.config import AuditConfig
from agent_core.state.audit_sqlite import SqliteAuditStore
from agent_core.state.quotas import MemoryRateLimiter
from agent_core.usage.budgets import BudgetLimit, Budgets
from agent_core.usage.command import UsageCommand
from agent_core.usage.ledger import MemoryUsageLedger
from agent_core.usage.recorder import BudgetHook
from tests.support.tools import EchoTool

from .conftest import USER, collect


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteAuditStore]:
    store = SqliteAuditStore(tmp_path / "state.db")
    yield store
    await store.close()


def kinds(records: list[AuditRecord]) -> list[str]:
    return [r.kind for r in records]


async def test_a_tool_turn_is_chained_with_the_person_as_a_pseudonym(
    make_agent: Callable[..., Agent], store: SqliteAuditStore, tmp_path: Path
) -> None:
    forwarded = tmp_path / "audit.jsonl"
    audit = TrailAuditLogger(store, forwarders=[JsonlForwarder(forwarded)])
    llm = ScriptedLlmService(
        [ScriptedResponse.tool("echo", {"text": "hi", "api_key": "sk-123"}), "done"]
    )
    agent = make_agent(llm, tools=[(EchoTool(), ["user"])], audit_logger=audit)
    await collect(agent, "echo hi please", conversation_id="slack:T1:C1:17.1")
    records = await store.records()
    assert kinds(records) == [
        "question",
        "tool_access_check",
        "tool_invocation",
        "tool_result",
        "ai_response_generated",
    ]
    pseudonym = (await store.pseudonyms()).of(USER.id)
    assert {r.person for r in records} == {pseudonym}
    assert {r.workspace for r in records} == {"slack:T1"}
    question = records[0].details or {}
    assert (question["length"], question["groups"], "text" in question) == (14, ["user"], False)
    invocation = records[2].details or {}
    assert invocation["parameters"] == {"text": "hi", "api_key": "[REDACTED]"}
    assert USER.id not in json.dumps([r.model_dump() for r in records])
    assert (await store.people())[pseudonym] == {"id": USER.id, "name": "Uma"}
    assert (await store.verify()).ok
    lines = [json.loads(line) for line in forwarded.read_text().splitlines()]
    assert [line["hash"] for line in lines] == [r.hash for r in records]


async def test_the_question_text_only_when_configured(
    make_agent: Callable[..., Agent], store: SqliteAuditStore
) -> None:
    config = AgentConfig(audit_config=AuditConfig(include_question_text=True))
    agent = make_agent(audit_logger=TrailAuditLogger(store), config=config)
    await collect(agent, "what is revenue?")
    question = (await store.records())[0]
    assert question.details is not None and question.details["text"] == "what is revenue?"


async def test_a_refusal_and_a_budget_stop(
    make_agent: Callable[..., Agent], store: SqliteAuditStore
) -> None:
    audit = TrailAuditLogger(store)
    outsider = make_agent(
        audit_logger=audit, config=AgentConfig(allowed_groups=["finance"], refusal="Not you.")
    )
    await collect(outsider, "hello")
    budgets = Budgets(
        [BudgetLimit(scope="person", period="month", cost=0)], counters=MemoryRateLimiter()
    )
    budgeted = make_agent(audit_logger=audit, lifecycle_hooks=[BudgetHook(budgets)])
    await collect(budgeted, "hello")
    records = await store.records()
    assert kinds(records) == ["refusal", "question", "budget_stop"]
    assert records[0].details is not None and records[0].details["reason"] == "Not you."
    assert records[2].details is not None and "budget" in records[2].details["reason"]
    assert (await store.verify()).ok


async def test_a_command_answered_without_the_model(
    make_agent: Callable[..., Agent], store: SqliteAuditStore
) -> None:
    agent = make_agent(audit_logger=TrailAuditLogger(store))
    agent.workflow_handler = UsageCommand(MemoryUsageLedger(), agent.workflow_handler)
    await collect(agent, "/usage")
    records = await store.records()
    assert kinds(records)[-1] == "admin_command"
    assert records[-1].details is not None and records[-1].details["command"] == "/usage"
