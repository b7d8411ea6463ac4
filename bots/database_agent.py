"""The built-in SQL agent on *your* database (``THREADLINE_DATABASE_URL``): the parts that
differ from the demo shop.

The runner is ``SqlAlchemyRunner`` (read-only by construction); the schema is never pasted
whole into the prompt: ``SchemaSource`` introspects the database at start (on a thread of its
own, with the start-up check logged, loudly when the user can write) and keeps a cached,
refreshed index, and ``SchemaContextEnhancer`` gives each turn the tables relevant to its
question. An unreachable database does not stop the start: see
``agent_core.database.schema_source`` for the policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_source import SchemaSource, cache_path_for
from agent_core.extensions.enhancer import DefaultLlmContextEnhancer
from agent_core.memory.base import AgentMemory

logger = logging.getLogger("threadline.database")

DATABASE_PROMPT = """You are Threadline, a data assistant in a chat thread (Slack or Microsoft \
Teams). You answer questions about the team's {dialect} database.

Use `run_sql` for every question that needs data; never invent numbers. Write {dialect} SQL, \
one read-only statement per call (SELECT or WITH ... SELECT): the database refuses writes. \
The tables relevant to the question are listed under "Database schema" below; quote \
identifiers exactly as shown there. If a table you need is not listed, look it up in the \
database's catalog (e.g. information_schema) with `run_sql`. When a chart makes the answer \
clearer (trends, comparisons across categories), also call `visualize_data` with the SQL \
that produces the chart's data (labels first, then numbers). Before writing a query for a \
question like one answered before, `search_saved_correct_tool_uses` gives SQL that worked \
(examples verified by a thumbs-up come first).

Answer in short markdown: the key numbers first, then a sentence of interpretation."""


@dataclass
class DatabaseParts:
    """What the built-in agent needs for a user's database."""

    runner: SqlAlchemyRunner
    source: SchemaSource
    enhancer: SchemaContextEnhancer
    prompt: str

    def welcome(self, *, uses_claude: bool) -> str:
        text = (
            f"Hi! I answer questions about your {self.runner.dialect} database "
            f"(`{self.runner.masked_url}`) with read-only SQL queries and charts. "
            "Type `/help` for commands."
        )
        if not uses_claude:
            text += (
                "\n\n_No `ANTHROPIC_API_KEY` is set: the scripted demo model only knows the "
                "demo shop. Set the key to ask about your database._"
            )
        return text


def build_database_parts(
    url: str,
    *,
    data_dir: Path,
    memory: AgentMemory,
    training_dir: Path | None = None,
    max_tokens: int = 8000,
    start: bool = True,
) -> DatabaseParts:
    """The runner, schema source and enhancer for ``url`` (``DatabaseConfigError`` when the
    URL is malformed or its driver is missing); ``start``: begin the start-up check and
    introspection now, on a thread of its own."""
    runner = SqlAlchemyRunner(url)
    source = SchemaSource(
        runner, cache_path=cache_path_for(data_dir, runner), training_dir=training_dir
    )
    if start:
        logger.info(
            "database %s (%s): starting the schema check", runner.masked_url, runner.dialect
        )
        source.start()
    enhancer = SchemaContextEnhancer(
        source, inner=DefaultLlmContextEnhancer(memory), max_tokens=max_tokens
    )
    return DatabaseParts(runner, source, enhancer, DATABASE_PROMPT.format(dialect=runner.dialect))
