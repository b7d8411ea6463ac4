"""Two people, one bot, one memory: the parts the channel privacy tests share (issue 18).

The agent is the real one with Claude's wire format: ``AnthropicLlmService`` on the fake
Messages API (every request body recorded), the real memory tools, a real ``run_sql`` over a
small SQLite file, and the default context enhancer. Each person's question, SQL and note
carry unique markers, so a test can look for them in everything another person's turns sent
to the model and to the screen.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_core import Agent, AgentMemory, ConversationStore, ToolRegistry, UserResolver
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic, RecordedRequest, Reply
from agent_core.tools.memory_tools import (
    SaveQuestionToolArgsTool,
    SaveTextMemoryTool,
    SearchSavedCorrectToolUsesTool,
)
from agent_core.tools.sql import RunSqlTool
from tests.agent_kind import agent_class

EVERYONE = ["user", "admin"]
QUESTION = "Who are the top customers by revenue, excluding cancelled orders?"
"""What everybody asks, in their own words plus their marker: similar enough (about 0.79 on
the lexical scale) that any memory offered by mistake is found, by the enhancer's 0.7 too."""


@dataclass(frozen=True)
class Marks:
    """The markers of what one person asked somewhere: ``MARK-{tag}-Q/SQL/NOTE``."""

    tag: str

    @property
    def q(self) -> str:
        return f"MARK-{self.tag}-Q"

    @property
    def sql(self) -> str:
        return f"MARK-{self.tag}-SQL"

    @property
    def note(self) -> str:
        return f"MARK-{self.tag}-NOTE"

    @property
    def all(self) -> tuple[str, str, str]:
        return (self.q, self.sql, self.note)

    @property
    def question(self) -> str:
        return f"{QUESTION} ({self.q})"

    @property
    def note_text(self) -> str:
        return f"Revenue of top customers excludes cancelled orders ({self.note})"


def search_memory(question: str = QUESTION) -> Reply:
    """The model looks for every similar past tool use (threshold 0: anything offered)."""
    return Reply.tool(
        "search_saved_correct_tool_uses",
        {"question": question, "similarity_threshold": 0.0, "limit": 20},
    )


def answer_with_memories(marks: Marks, *, search: bool = False) -> list[Reply]:
    """The model's side of a turn that runs SQL and saves a note, both with ``marks``."""
    return [
        *([search_memory(marks.question)] if search else []),
        Reply.tool("run_sql", {"sql": f"SELECT '{marks.sql}' AS m, count(*) AS n FROM customers"}),
        Reply.tool("save_text_memory", {"content": marks.note_text}),
        Reply.text("Acme leads, then Globex."),
    ]


def answer_after_search(question: str = QUESTION) -> list[Reply]:
    return [search_memory(question), Reply.text("Acme leads, then Globex.")]


def shop_database(directory: Path) -> Path:
    path = directory / "shop.db"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO customers (name) VALUES (?)", [("Acme",), ("Globex",)])
    return path


def build_memory_agent(
    llm: AnthropicLlmService,
    resolver: UserResolver,
    memory: AgentMemory,
    database: Path,
    *,
    conversations: ConversationStore | None = None,
) -> Agent:
    """The demo agent's parts (``bots.demo``), with the memory tools for everyone."""
    registry = ToolRegistry()
    registry.register_local_tool(RunSqlTool(SqlAlchemyRunner.sqlite(database)), EVERYONE)
    registry.register_local_tool(SearchSavedCorrectToolUsesTool(), EVERYONE)
    registry.register_local_tool(SaveQuestionToolArgsTool(), EVERYONE)
    registry.register_local_tool(SaveTextMemoryTool(), EVERYONE)
    return agent_class()(
        llm_service=llm,
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=memory,
        conversation_store=conversations,
    )


@asynccontextmanager
async def claude_on_fake() -> AsyncIterator[tuple[FakeAnthropic, AnthropicLlmService]]:
    """The fake Messages API and the real service pointed at it."""
    async with FakeAnthropic() as fake:
        service = AnthropicLlmService(
            model="claude-test-model",
            api_key="sk-ant-test",
            base_url=fake.base_url,
            timeout=5.0,
        )
        try:
            yield fake, service
        finally:
            await service.aclose()


def wire(items: Iterable[Any]) -> str:
    """Everything in ``items`` as one text (request bodies, Web API arguments...)."""
    return json.dumps(list(items), default=str)


def llm_text(requests: Sequence[RecordedRequest]) -> str:
    return wire(r.body for r in requests)


def found(markers: Iterable[str], text: str) -> list[str]:
    """The ``markers`` that occur in ``text`` (a test asserts this is empty)."""
    return [marker for marker in markers if marker in text]
