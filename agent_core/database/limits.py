"""``EngineLimits``: how much memory, how many threads and how long a value one query may use
inside an embedded engine (DuckDB, SQLite), where no server bounds it.

DuckDB gets ``memory_limit`` and ``threads`` on every connection (the database URL runner
and the shared-file tables alike); SQLite gets ``setlimit`` on the length of any string or
blob (``SQLITE_LIMIT_LENGTH``: ``printf('%.*c', 900000000, 'x')`` cannot build 900 MB), of
the SQL text, of LIKE patterns and of expression depth. One SQLite function call can still
run for seconds (the progress handler only runs between steps), so the runner also stops
waiting at the deadline (``HARD_STOP_GRACE``): the asker hears "stopped" on time, and the
interrupted query ends on its own thread.

>>> EngineLimits().duckdb_config()
{'memory_limit': '1GB', 'threads': 2, 'max_temp_directory_size': '0GB'}
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

HARD_STOP_GRACE = 1.0
"""Seconds past its timeout a query's caller waits for the engine to stop before it is told
the query was stopped anyway (the engine's thread finishes on its own)."""


@dataclass(frozen=True, kw_only=True)
class EngineLimits:
    """Bounds of one query in an embedded engine (see the module docstring)."""

    memory_limit: str = "1GB"
    """DuckDB's ``memory_limit``: a query past it fails with "out of memory"."""
    threads: int = 2
    """DuckDB's ``threads`` per connection."""
    max_value_bytes: int = 16 * 1024 * 1024
    """The longest string or blob one SQLite value may be."""
    max_sql_bytes: int = 1024 * 1024
    max_like_pattern: int = 1000
    max_expression_depth: int = 1000

    def duckdb_config(self) -> dict[str, Any]:
        """DuckDB settings for a connection: bounded memory and threads, no spilling to disk
        (a query that does not fit fails instead of filling the disk)."""
        return {
            "memory_limit": self.memory_limit,
            "threads": self.threads,
            "max_temp_directory_size": "0GB",
        }

    def apply_sqlite(self, connection: sqlite3.Connection) -> None:
        """Set the connection's SQLite limits (they last as long as the connection)."""
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.max_value_bytes)
        connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, self.max_sql_bytes)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, self.max_like_pattern)
        connection.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, self.max_expression_depth)
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
