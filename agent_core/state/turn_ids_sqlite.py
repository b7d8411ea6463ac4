"""``TurnIds``: the ids of SQLite turns, handed out from blocks reserved in the file.

A turn's id orders its thread and names the turn to the outside (a Stop button, the answer
a feedback is for), so it is never given twice, across restarts too. SQLite's
``AUTOINCREMENT`` keeps that promise by rewriting its ``sqlite_sequence`` row in every
insert: one more page in each commit before an ack. Here a block of ``BLOCK`` ids is
reserved at a time (its end written in ``turn_ids``: one commit per block, before any id of
it is used) and its ids are handed out in order from memory. A restart continues after the
last block reserved (at most a block of ids goes unused); a file an earlier version wrote
continues after the ids its ``sqlite_sequence`` counted.
"""

from __future__ import annotations

import sqlite3

from agent_core.state.sqlite import SqliteDatabase

BLOCK = 1024


class TurnIds:
    """Increasing turn ids for the ``turns`` table of ``database`` (one process per file).

    >>> import asyncio, tempfile, os
    >>> db = SqliteDatabase(os.path.join(tempfile.mkdtemp(), "ids.db"))
    >>> db.ensure_schema("CREATE TABLE IF NOT EXISTS turns (id INTEGER PRIMARY KEY)")
    >>> async def demo():
    ...     ids = TurnIds(db)
    ...     first = [await ids.next() for _ in range(2)]
    ...     after_a_restart = await TurnIds(db).next()
    ...     await db.close()
    ...     return first, after_a_restart
    >>> asyncio.run(demo())
    ([1, 2], 1025)
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database
        self._next = self._end = 0
        database.ensure_schema("CREATE TABLE IF NOT EXISTS turn_ids (next INTEGER NOT NULL);")

    def take(self) -> int | None:
        """The next id of the block reserved; None when it is used up (then ``next``)."""
        if self._next >= self._end:
            return None
        taken = self._next
        self._next += 1
        return taken

    async def next(self) -> int:
        """The next id, after every id given before (reserving a block first when none is
        left)."""
        while (taken := self.take()) is None:
            start = await self._db.write(_reserve)
            # another call may have reserved meanwhile: ids never go back
            self._next, self._end = max(start, self._next), start + BLOCK
        return taken


def _reserve(connection: sqlite3.Connection) -> int:
    """The start of a new block, above every id given so far; its end written down."""
    (start,) = connection.execute("SELECT ifnull(max(id), 0) + 1 FROM turns").fetchone()
    starts = [start, *(row[0] for row in connection.execute("SELECT next FROM turn_ids"))]
    if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        counted = "SELECT seq + 1 FROM sqlite_sequence WHERE name = 'turns'"
        starts += [row[0] for row in connection.execute(counted)]
    start = max(starts)
    connection.execute("DELETE FROM turn_ids")
    connection.execute("INSERT INTO turn_ids VALUES (?)", (start + BLOCK,))
    return int(start)
