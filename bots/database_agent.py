"""The built-in SQL agent on *your* database (``THREADLINE_DATABASE_URL``): the parts that
differ from the demo shop.

The runner is ``DataAccess`` (read-only by construction; each asker's queries run as their
data identity: ``agent_core.database.access``); the schema is never pasted whole into the
prompt: the database is introspected at start (on a thread of its own, with the start-up
checks of the database and of each mapped role logged, loudly when one fails or could
write) into a cached, refreshed index, and ``SchemaContextEnhancer`` gives each turn the
tables relevant to its question that the asker may read. An unreachable database does not
stop the start: see ``agent_core.database.schema_source`` for the policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from agent_core.database.access import DataAccess
from agent_core.database.askers import DataAccessGate, IdentityResolver
from agent_core.database.enhancer import SchemaContextEnhancer
from agent_core.database.settings import DatabaseConfig
from agent_core.database.urls import DatabaseConfigError
from agent_core.extensions.enhancer import DefaultLlmContextEnhancer
from agent_core.extensions.hooks import LifecycleHook
from agent_core.memory.base import AgentMemory
from agent_core.users import UserResolver

logger = logging.getLogger("threadline.database")

CHECK_WAIT = 15.0
"""Seconds the start waits for the database's verdict on its user (a connection refused or
timed out says "unreachable" sooner, and the start goes on)."""

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
    """What the built-in agent needs for a user's database: the database and its people
    (``DataAccess``: each asker's queries and schema as their data identity), the schema
    enhancer, the prompt, and the hooks that carry the identity through the turn."""

    access: DataAccess
    enhancer: SchemaContextEnhancer
    prompt: str

    @property
    def runner(self) -> DataAccess:
        return self.access

    def resolver(self, base: UserResolver) -> UserResolver:
        """``base``, with each user marked by their data identity (memories follow it)."""
        return IdentityResolver(base, self.access)

    def hooks(self) -> list[LifecycleHook]:
        """The gate that refuses people with no data access (when the mapping says so)."""
        return [DataAccessGate(self.access)] if self.access.config.unmapped == "refuse" else []

    def welcome(self, *, uses_claude: bool) -> str:
        text = (
            f"Hi! I answer questions about your {self.access.dialect} database "
            f"(`{self.access.masked_url}`) with read-only SQL queries and charts. "
            "Type `/help` for commands."
        )
        if not uses_claude:
            text += (
                "\n\n_No `ANTHROPIC_API_KEY` is set: the scripted demo model only knows the "
                "demo shop. Set the key to ask about your database._"
            )
        return text


def build_database_parts(
    config: DatabaseConfig,
    *,
    data_dir: Path,
    memory: AgentMemory,
    name: str = "default",
    start: bool = True,
) -> DatabaseParts:
    """The database, schema enhancer and prompt for ``config`` (``DatabaseConfigError`` when
    a URL is malformed or its driver is missing); ``start``: begin the start-up checks (the
    database, each mapped identity) and introspection now, on a thread of their own, and
    refuse to start (``DatabaseConfigError``) when the database's user is a superuser or may
    reach the server (``agent_core.database.privileges``)."""
    access = DataAccess(config, name=name, data_dir=data_dir)
    if start:
        logger.info(
            "database %s (%s): starting the schema check", access.masked_url, access.dialect
        )
        access.start()
        # a user too powerful to be used stops the start (an unreachable one does not)
        if access.checked.wait(CHECK_WAIT) and access.refusal is not None:
            raise DatabaseConfigError(f"{access.masked_url}: {access.refusal}")
    enhancer = SchemaContextEnhancer(
        access, inner=DefaultLlmContextEnhancer(memory), max_tokens=config.schema_max_tokens
    )
    return DatabaseParts(access, enhancer, DATABASE_PROMPT.format(dialect=access.dialect))
