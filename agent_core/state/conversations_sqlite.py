"""``SqliteConversationStore``: conversations in an embedded SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from os import PathLike

from agent_core.clock import SYSTEM_CLOCK
from agent_core.conversations import Conversation, ConversationStore
from agent_core.state.sqlite import SqliteDatabase
from agent_core.users import User

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    user_id TEXT NOT NULL,
    id TEXT NOT NULL,
    updated_at REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversations_recent ON conversations (user_id, updated_at DESC);
CREATE INDEX IF NOT EXISTS conversations_age ON conversations (updated_at);
"""


class SqliteConversationStore(ConversationStore):
    """The default single-process store: one row per (user, conversation), the whole
    conversation written in one statement, so a turn is committed whole or not at all and a
    restart loses nothing.

    ``retention`` (seconds since the last update; ``None`` keeps forever) hides older
    conversations at once and deletes them on later writes.

    >>> import asyncio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "conversations.db")
    >>> async def demo():
    ...     store = SqliteConversationStore(path)
    ...     await store.create_conversation("slack:T1:C1:1.0", User(id="ana"), "hi")
    ...     await store.close()
    ...     reopened = SqliteConversationStore(path)
    ...     found = await reopened.list_conversations(User(id="ana"))
    ...     await reopened.close()
    ...     return [c.id for c in found]
    >>> asyncio.run(demo())
    ['slack:T1:C1:1.0']
    """

    def __init__(
        self,
        database: SqliteDatabase | str | PathLike[str],
        *,
        retention: float | None = None,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self.retention = retention
        self._clock = clock
        self._db.ensure_schema(_SCHEMA)

    def _oldest_kept(self) -> float:
        return float("-inf") if self.retention is None else self._clock() - self.retention

    async def _write(self, conversation: Conversation) -> None:
        row = (
            conversation.user.id,
            conversation.id,
            conversation.updated_at,
            conversation.model_dump_json(),
        )
        oldest = self._oldest_kept()

        def write(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?, ?, ?)", row)
            if self.retention is not None:
                connection.execute("DELETE FROM conversations WHERE updated_at < ?", (oldest,))

        await self._db.transaction(write)

    async def create_conversation(
        self, conversation_id: str, user: User, initial_message: str
    ) -> Conversation:
        conversation = Conversation(id=conversation_id, user=user)
        await self._write(conversation)
        return conversation

    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None:
        sql = "SELECT body FROM conversations WHERE user_id = ? AND id = ? AND updated_at >= ?"
        args = (user.id, conversation_id, self._oldest_kept())
        row = await self._db.run(lambda c: c.execute(sql, args).fetchone())
        return None if row is None else Conversation.model_validate_json(row[0])

    async def update_conversation(self, conversation: Conversation) -> None:
        await self._write(conversation)

    async def delete_conversation(self, conversation_id: str, user: User) -> bool:
        sql = "DELETE FROM conversations WHERE user_id = ? AND id = ?"
        deleted = await self._db.run(lambda c: c.execute(sql, (user.id, conversation_id)).rowcount)
        return deleted > 0

    async def list_conversations(
        self, user: User, limit: int = 50, offset: int = 0
    ) -> list[Conversation]:
        sql = (
            "SELECT body FROM conversations WHERE user_id = ? AND updated_at >= ?"
            " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
        )
        args = (user.id, self._oldest_kept(), max(limit, 0), max(offset, 0))
        rows = await self._db.run(lambda c: c.execute(sql, args).fetchall())
        return [Conversation.model_validate_json(body) for (body,) in rows]

    async def prune_before(self, cutoff: float) -> int:
        sql = "DELETE FROM conversations WHERE updated_at < ?"
        return int(await self._db.run(lambda c: c.execute(sql, (cutoff,)).rowcount))

    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> int:
        """Every row of ``user_id``, also those past retention not yet swept."""

        def erase(connection: sqlite3.Connection) -> int:
            if dry_run:
                sql = "SELECT count(*) FROM conversations WHERE user_id = ?"
                return int(connection.execute(sql, (user_id,)).fetchone()[0])
            sql = "DELETE FROM conversations WHERE user_id = ?"
            return int(connection.execute(sql, (user_id,)).rowcount)

        return await self._db.run(erase)

    async def close(self) -> None:
        if self._owns_database:
            await self._db.close()
