"""``SchemaContextEnhancer``: each turn's prompt gets the tables relevant to the question.

Never the whole catalogue of a big database: ``SchemaIndex.select`` picks the tables (and the
tables they join to, the data team's notes and examples) within ``max_tokens``. The tables
of the conversation's previous turn are kept when there is room, so a follow-up ("and by
month?") still sees them. The enhancer it wraps (by default the memory one) runs first.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

from agent_core.database.schema_index import DEFAULT_MAX_TOKENS, SchemaIndex
from agent_core.extensions.enhancer import LlmContextEnhancer

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.llm.base import LlmMessage
    from agent_core.users import User


class SchemaProvider(Protocol):
    """Where the schema of a question comes from: one ``SchemaSource`` for everyone, or a
    ``DataAccess`` that gives each asker the tables their data identity may read."""

    @property
    def dialect(self) -> str: ...

    async def schema_for(self, user: User) -> tuple[SchemaIndex | None, str | None]:
        """The index for ``user`` (None when there is none) and why the last attempt to
        read the database failed, if it did."""


logger = logging.getLogger(__name__)

REMEMBERED_CONVERSATIONS = 1000


class SchemaContextEnhancer(LlmContextEnhancer):
    """Appends ``## Database schema`` with the tables relevant to the message.

    >>> import asyncio, os, sqlite3, tempfile
    >>> from agent_core.database.runner import SqlAlchemyRunner
    >>> from agent_core.database.schema_source import SchemaSource
    >>> from agent_core.context import ToolContext
    >>> from agent_core.users import User
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> sqlite3.connect(path).execute("CREATE TABLE customers (id INTEGER, email TEXT)").close()
    >>> enhancer = SchemaContextEnhancer(SchemaSource(SqlAlchemyRunner.sqlite(path)))
    >>> context = ToolContext(user=User(id="u"), conversation_id="c", request_id="r")
    >>> prompt = asyncio.run(enhancer.enhance_system_prompt_for(context, "You help.", "emails?"))
    >>> "CREATE TABLE customers" in prompt
    True
    """

    def __init__(
        self,
        source: SchemaProvider,
        *,
        inner: LlmContextEnhancer | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.source = source
        self.inner = inner
        self.max_tokens = max_tokens
        self._last_tables: OrderedDict[tuple[str, str], list[str]] = OrderedDict()

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        from agent_core.context import ToolContext

        context = ToolContext(user=user, conversation_id="", request_id="")
        return await self.enhance_system_prompt_for(context, system_prompt, user_message)

    async def enhance_system_prompt_for(
        self, context: ToolContext, system_prompt: str, user_message: str
    ) -> str:
        if self.inner is not None:
            system_prompt = await self.inner.enhance_system_prompt_for(
                context, system_prompt, user_message
            )
        schema = await self.schema_text(context, user_message)
        return f"{system_prompt}\n\n## Database schema\n\n{schema}"

    async def schema_text(self, context: ToolContext, question: str) -> str:
        """The schema section for one question, as the asker may see it (or why there is
        none)."""
        index, error = await self.source.schema_for(context.user)
        if index is None:
            return (
                f"The database ({self.source.dialect}) could not be reached"
                f"{f': {error}' if error else ''}. If a query fails "
                "as unavailable, tell the person the database cannot be reached right now and "
                "to try again later; do not guess numbers."
            )
        key = (context.user.id, context.conversation_id)
        selected = index.select(
            question, max_tokens=self.max_tokens, also=self._last_tables.get(key, [])
        )
        self._remember(key, [table.qualified_name for table in selected.tables[:10]])
        unreachable = (
            f"\n\n(Note: the database could not be reached at the last attempt: {error})"
            if error
            else ""
        )
        return f"Dialect: {self.source.dialect}. {selected.render()}{unreachable}"

    def _remember(self, key: tuple[str, str], tables: list[str]) -> None:
        if not key[1]:
            return
        self._last_tables[key] = tables
        self._last_tables.move_to_end(key)
        while len(self._last_tables) > REMEMBERED_CONVERSATIONS:
            self._last_tables.popitem(last=False)

    async def enhance_user_messages(
        self, messages: list[LlmMessage], user: User
    ) -> list[LlmMessage]:
        if self.inner is None:
            return messages
        return await self.inner.enhance_user_messages(messages, user)
