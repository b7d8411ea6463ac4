"""Who hears of a decision: every bot serving the agent in this process (one agent on Slack
and Teams at once: each channel's ``Approvals`` shows it), each book once, until ``stop``."""

from __future__ import annotations

from typing import Any, cast

from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
from agent_core.approvals import ApprovalBook, ApprovalRecord
from agent_core.state import MemoryTurnQueue
from bots.agents import ServedAgent
from bots.approvals import Approvals, listen


def agent_on(book: ApprovalBook) -> Agent:
    return Agent(
        llm_service=ScriptedLlmService(),
        tool_registry=ToolRegistry(),
        agent_memory=InMemoryAgentMemory(),
        approval_book=book,
    )


async def decide(book: ApprovalBook, approval_id: str) -> None:
    await book.open(ApprovalRecord.example(id=approval_id))
    await book.note_message(approval_id, {"platform": "any"})
    assert await book.decide(approval_id, "approved", by=None) is not None


async def test_one_agent_on_two_channels_shows_each_decision_on_both_until_one_stops() -> None:
    book = ApprovalBook()
    agent = agent_on(book)
    shown: list[str] = []

    def channel(name: str) -> Approvals:
        async def show(record: ApprovalRecord) -> None:
            shown.append(f"{name}:{record.id}")

        async def resumed(record: ApprovalRecord, hints: Any) -> None:
            return None

        return Approvals(agent, MemoryTurnQueue(), show=show, resumed=resumed)

    slack, teams = channel("slack"), channel("teams")
    await decide(book, "a1")
    assert shown == ["slack:a1", "teams:a1"]  # the second bot built no longer silences the first
    await slack.stop()
    await decide(book, "a2")
    assert shown[2:] == ["teams:a2"]
    slack.start()  # opened again: shows decisions again (after the channel built first)
    await decide(book, "a3")
    assert shown[3:] == ["teams:a3", "slack:a3"]
    await slack.stop()
    await teams.stop()
    await decide(book, "a4")
    assert shown[5:] == []


async def test_profiles_sharing_one_book_are_heard_once() -> None:
    class Profiles:
        def __init__(self, *agents: Agent) -> None:
            self.agents = list(agents)

        def served_agents(self) -> list[Agent]:
            return self.agents

    book, other = ApprovalBook(), ApprovalBook()
    told: list[str] = []

    async def hear(record: ApprovalRecord) -> None:
        told.append(record.id)

    unsubscribe = listen(
        cast(ServedAgent, Profiles(agent_on(book), agent_on(book), agent_on(other))), hear
    )
    await decide(book, "a-shared")
    await decide(other, "a-other")
    unsubscribe()
    await decide(book, "a-after")
    assert told == ["a-shared", "a-other"]
