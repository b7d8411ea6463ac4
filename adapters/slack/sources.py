"""The queries behind Slack answers, kept for "Show query", and the private reply to a click.

A Slack message looks the same to everyone in the channel, and a button's value is readable
by any of them, so the SQL is never in the message: the answer carries its tables and a
"Show query" button whose value is the turn id (``controls.sources_block``). The queries are
kept here in the shared cache under the answer's workspace, channel, thread and turn; a
click reads them back with the key built from the *signed click* (where it happened), never
from the value alone, so a forged value cannot reach another channel's queries.
Whether the clicker may see SQL is decided at the click, by the caller
(``bots.slack.bot``), from the clicker's own groups.

>>> import asyncio
>>> from agent_core.components import Source, SourcesComponent
>>> from agent_core.state import MemoryKeyValueStore
>>> queries = QueryRecords(MemoryKeyValueStore())
>>> cited = SourcesComponent(sources=[Source(tool="run_sql", query="SELECT 1")])
>>> asyncio.run(queries.save("T1", "C1", "1.0", "42", cited))
>>> [s.query for s in asyncio.run(queries.load("T1", "C1", "1.0", "42"))]
['SELECT 1']
>>> asyncio.run(queries.load("T1", "C2", "1.0", "42")) is None
True
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import TypeAdapter, ValidationError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import thread_key
from adapters.slack.errors import SlackCallFailed
from adapters.slack.limits import SlackMessage
from agent_core.components import Source, SourcesComponent
from agent_core.state import KeyValueStore

log = logging.getLogger(__name__)

QUERIES_TTL = 30 * 24 * 3600.0
"""How long "Show query" works after the answer (the queries are dropped then)."""
NOT_ALLOWED = (
    ":lock: Only people allowed to see queries (admins) can see the SQL behind an answer. "
    "The tables it used are listed under the answer."
)
GONE = ":hourglass: The queries behind this answer are no longer kept."

_SOURCES = TypeAdapter(list[Source])


class QueryRecords:
    """The queries of each cited answer, by where it was posted and its turn; see the module
    docstring."""

    def __init__(self, cache: KeyValueStore, *, ttl: float = QUERIES_TTL) -> None:
        self._cache = cache
        self.ttl = ttl

    @staticmethod
    def _key(team: str, channel: str, thread_ts: str, turn_id: str) -> str:
        return f"slack:queries:{thread_key(team, channel, thread_ts)}:{turn_id}"

    async def save(
        self, team: str, channel: str, thread_ts: str, turn_id: str, sources: SourcesComponent
    ) -> None:
        """Keep the queries of ``turn_id``'s answer in that thread."""
        value = [source.model_dump(mode="json") for source in sources.sources]
        await self._cache.set(self._key(team, channel, thread_ts, turn_id), value, ttl=self.ttl)

    async def load(
        self, team: str, channel: str, thread_ts: str, turn_id: str
    ) -> list[Source] | None:
        """The queries kept for that answer, or None (never kept, expired, unreadable)."""
        value = await self._cache.get(self._key(team, channel, thread_ts, turn_id))
        if value is None:
            return None
        try:
            return _SOURCES.validate_python(value)
        except ValidationError:
            log.warning("slack: unreadable queries of turn %s dropped", turn_id)
            return None


async def show_privately(
    client: AsyncWebClient,
    *,
    channel: str,
    user: str,
    thread_ts: str | None,
    messages: list[SlackMessage],
) -> None:
    """Post ``messages`` to ``user`` alone (``chat.postEphemeral``), in the thread clicked."""
    for message in messages:
        args: dict[str, Any] = {
            "channel": channel,
            "user": user,
            "text": message.text,
            "blocks": message.blocks,
        }
        if thread_ts:
            args["thread_ts"] = thread_ts
        try:
            await client.chat_postEphemeral(**args)
        except SlackCallFailed as error:
            log.warning("slack: could not show queries to %s (%s)", user, error.failure)
            return
