"""``SqliteGuard``: the authorizer and progress handler of one SQLite query.

SQLite is opened ``mode=ro`` (``agent_core.database.dialects``); the guard refuses, inside
the engine, what the file mode alone would not: ATTACH, extension loading and file functions,
and PRAGMAs that change settings. For the model's queries it also enforces the function
allow list (``agent_core.database.functions``) inside the engine, so SQL the parser and
SQLite read differently still calls nothing else. Its progress handler stops the statement
at its deadline or when the query is cancelled (the user's Stop), remembering why.

>>> import sqlite3, threading, time
>>> guard = SqliteGuard(allow_writes=False, deadline=time.perf_counter() + 5,
...                     cancel=threading.Event())
>>> db = sqlite3.connect(":memory:")
>>> guard.install(db)
>>> db.execute("CREATE TABLE t (x)")
Traceback (most recent call last):
...
sqlite3.DatabaseError: not authorized
>>> guard.refused
'statements that change the database'
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from agent_core.database.functions import SQLITE_OPERATORS
from agent_core.database.statements import READ_PRAGMAS

# Everything that changes the database or reaches outside it; refused unless allow_writes.
_WRITE_ACTIONS = frozenset(
    getattr(sqlite3, name)
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_"))
    or name
    in (
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_ALTER_TABLE",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
    )
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


class SqliteGuard:
    """The authorizer and progress handler of one query, remembering why it stopped it."""

    def __init__(
        self,
        *,
        allow_writes: bool,
        deadline: float,
        cancel: threading.Event,
        functions: frozenset[str] | None = None,
    ) -> None:
        self.allow_writes = allow_writes
        self.functions = None if functions is None else functions | SQLITE_OPERATORS
        """The functions a query may call (None: Threadline's own queries, any but the
        denied ones)."""
        self.deadline = deadline
        self.cancel = cancel
        self.refused: str | None = None
        self.timed_out = False

    def install(self, connection: Any) -> None:
        connection.set_authorizer(self.authorize)
        connection.set_progress_handler(self.progress, 1000)

    @staticmethod
    def remove(connection: Any) -> None:
        connection.set_authorizer(None)
        connection.set_progress_handler(None, 0)

    def authorize(self, action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
        refused = self._refusal(action, arg1, arg2)
        if refused is None:
            return sqlite3.SQLITE_OK
        self.refused = refused
        return sqlite3.SQLITE_DENY

    def _refusal(self, action: int, arg1: str | None, arg2: str | None) -> str | None:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return "ATTACH/DETACH"
        if action == sqlite3.SQLITE_FUNCTION and not self._admits(arg2 or ""):
            return f"the function {arg2}()"
        if self.allow_writes:
            return None
        if action in _WRITE_ACTIONS:
            return "statements that change the database"
        if action == sqlite3.SQLITE_PRAGMA and arg1 not in READ_PRAGMAS:
            return f"PRAGMA {arg1}"
        return None

    def _admits(self, function: str) -> bool:
        name = function.lower()
        if name in _DENIED_FUNCTIONS:
            return False
        return self.functions is None or name in self.functions

    def progress(self) -> int:
        if self.cancel.is_set():
            return 1
        if time.perf_counter() > self.deadline:
            self.timed_out = True
            return 1
        return 0
