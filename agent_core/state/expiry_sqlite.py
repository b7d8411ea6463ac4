"""``ExpiryPurge``: the expired rows of an SQLite table, deleted a few at a time.

Rows with an expiry (the key/value store's, the turn queue's dedupe keys) count as absent
once expired: every read and every "add if new" compares ``expires_at`` with now. Deleting
them only gives their space back, so it is done in small steps inside later writes: every
``PURGE_EVERY``-th write looks at the next ``PURGE_ROWS`` rows in key order (a cursor that
goes round the table) and deletes those of them that expired. No write pays for a backlog
(a day of keys that expired while the process was stopped, an hour's dedupe keys expiring
together) nor scans the table: the purge a write before an ack may run reads a few
neighbouring rows and changes a page or two. It needs no index on ``expires_at`` (an index
would cost a page in every write's commit). A write adds at most one row and the purges
look at four a write, so an expired row is gone within a quarter of the table's size in
writes, and the table stays within a third above its live rows.
"""

from __future__ import annotations

import sqlite3

PURGE_EVERY = 8
"""Writes between two purges."""
PURGE_ROWS = 32
"""Rows one purge looks at (and deletes at the most)."""


class ExpiryPurge:
    """Purges ``table`` (primary key ``key``, column ``expires_at``) as writes go by.

    >>> connection = sqlite3.connect(":memory:")
    >>> _ = connection.execute("CREATE TABLE seen (key TEXT PRIMARY KEY, expires_at REAL)")
    >>> rows = [(f"{n:03}", 1.0 if n % 2 else 9.0) for n in range(100)]
    >>> _ = connection.executemany("INSERT INTO seen VALUES (?, ?)", rows)
    >>> purge = ExpiryPurge("seen")
    >>> for _ in range(PURGE_EVERY):
    ...     purge.after_write(connection, now=2.0)
    >>> connection.execute("SELECT count(*) FROM seen").fetchone()[0] == 100 - PURGE_ROWS // 2
    True
    """

    def __init__(self, table: str) -> None:
        self._next = (
            f"SELECT max(key) FROM (SELECT key FROM {table} WHERE key > ? ORDER BY key"
            f" LIMIT {PURGE_ROWS})"
        )
        self._delete = f"DELETE FROM {table} WHERE key > ? AND key <= ? AND expires_at <= ?"
        self._after = ""
        """The last key the previous purge looked at ("": start from the first)."""
        self._writes = 0

    def after_write(self, connection: sqlite3.Connection, now: float) -> None:
        """Count a write in ``connection``'s transaction; on every ``PURGE_EVERY``-th, delete
        the rows expired by ``now`` among the next ``PURGE_ROWS``, in the same transaction."""
        self._writes += 1
        if self._writes % PURGE_EVERY:
            return
        (last,) = connection.execute(self._next, (self._after,)).fetchone()
        if last is not None:
            connection.execute(self._delete, (self._after, last, now))
        self._after = "" if last is None else last
