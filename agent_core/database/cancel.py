"""``QueryHandle``: one running query, so Stop and the deadline can cancel it on the server.

The worker thread that runs the query attaches its connection and cursor; any other thread
may ``request`` a cancel. The cancel reaches the server only while the query is attached and
not finished, under one lock, so a late cancel can never hit the next query that reuses the
pooled connection. A cancel that arrives between two statements of the query (PostgreSQL's
``DECLARE`` and ``FETCH``) is lost by the server, so it is repeated until the query ends.

>>> handle = QueryHandle()
>>> handle.request("timeout"), handle.request("stop"), handle.reason
(True, False, 'timeout')
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Literal

from agent_core.database.dialects import DialectRules

logger = logging.getLogger(__name__)

CancelReason = Literal["stop", "timeout"]

RESEND_AFTER = 0.25
"""Seconds to wait for the query to end before sending the cancel again."""
ATTEMPTS = 40


class QueryHandle:
    """What a canceller needs to know about one query, shared by two threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requested = threading.Event()
        self.reason: CancelReason | None = None
        self.dbapi_connection: Any = None
        self.cursor: Any = None
        self.connection_id: object = None
        self.finished = False
        self._ended = threading.Event()

    def request(self, reason: CancelReason) -> bool:
        """Ask for the query to stop; the first reason wins. False when already asked or
        the query has finished."""
        with self._lock:
            if self.reason is not None or self.finished:
                return False
            self.reason = reason
            self.requested.set()
            return True

    def attach(self, dbapi_connection: Any, connection_id: object = None) -> None:
        with self._lock:
            self.dbapi_connection = dbapi_connection
            self.connection_id = connection_id

    def attach_cursor(self, cursor: Any) -> None:
        with self._lock:
            self.cursor = cursor

    def finish(self) -> None:
        """The query is over: from now on no cancel reaches its connection."""
        with self._lock:
            self.finished = True
            self._ended.set()

    def cancel_on_server(
        self, rules: DialectRules, kill: Callable[[str], None] | None = None
    ) -> None:
        """Send the cancel the database understands until the query ends (called in a
        canceller thread)."""
        for _ in range(ATTEMPTS):
            with self._lock:
                if self.finished:
                    return
                if self.dbapi_connection is not None and not self._send(rules, kill):
                    return
            if self._ended.wait(RESEND_AFTER):
                return
        logger.warning("a %s query did not stop after %d cancels", rules.label, ATTEMPTS)

    def _send(self, rules: DialectRules, kill: Callable[[str], None] | None) -> bool:
        try:
            _cancel(rules, self, kill)
        except Exception:  # the deadline / Stop still hold on the client side
            logger.warning("could not cancel a %s query on the server", rules.label, exc_info=True)
            return False
        return True


def _cancel(rules: DialectRules, handle: QueryHandle, kill: Callable[[str], None] | None) -> None:
    connection = handle.dbapi_connection
    match rules.cancel:
        case "connection":
            cancel_safe = getattr(connection, "cancel_safe", None)
            if cancel_safe is not None:
                cancel_safe(timeout=5.0)
            else:
                connection.cancel()
        case "cursor":
            if handle.cursor is not None:
                handle.cursor.cancel()
        case "interrupt":
            with contextlib.suppress(AttributeError):
                connection.interrupt()
        case "kill_query":
            sql = rules.kill_sql(handle.connection_id)
            if sql and kill is not None and handle.connection_id is not None:
                kill(sql)
        case "none":
            pass
