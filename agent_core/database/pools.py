"""``DatabasePool``: one SQLAlchemy engine (its connection pool) and one bounded thread pool
per database URL per process.

Every runner on the same URL shares them, so the number of connections a process opens is
bounded however many agents, tools or channels use the database. Queries run on the thread
pool (never on the event loop); cancels run on a small pool of their own, so a cancel is
sent even when every query thread is busy.

>>> from agent_core.database.dialects import rules_for
>>> import tempfile, os, sqlite3
>>> path = os.path.join(tempfile.mkdtemp(), "t.db"); sqlite3.connect(path).close()
>>> pool_for(f"sqlite:///{path}") is pool_for(f"sqlite:///{path}")
True
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import NoSuchModuleError

from agent_core.database.dialects import DialectRules, rules_for
from agent_core.database.urls import missing_driver, parse_url

DEFAULT_WORKERS = 4


@dataclass
class DatabasePool:
    """The engine and the threads of one database URL."""

    url: URL
    rules: DialectRules
    writable: bool
    engine: Engine
    executor: ThreadPoolExecutor
    cancellers: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(2, thread_name_prefix="threadline-sql-cancel")
    )

    def kill(self, sql: str) -> None:
        """Run a cancel statement (``KILL QUERY 42``) on a connection of its own."""
        with self.engine.connect() as connection:
            connection.exec_driver_sql(sql)

    def dispose(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.cancellers.shutdown(wait=False, cancel_futures=True)
        self.engine.dispose()


_POOLS: dict[tuple[str, bool], DatabasePool] = {}
_LOCK = threading.Lock()


def _engine(url: URL, rules: DialectRules, *, writable: bool, workers: int) -> Engine:
    options: dict[str, Any] = {
        "pool_pre_ping": True,  # a database that restarted is reconnected to, not an error
        "pool_size": workers,
        "max_overflow": 2,  # room for cancels and introspection next to busy workers
        "pool_recycle": 1800,
    }
    creator = rules.creator(url, writable=writable)
    if creator is not None:
        options["creator"] = creator
    else:
        options["connect_args"] = rules.connect_args(url, writable=writable)
    try:
        return create_engine(url, **options)
    except NoSuchModuleError:
        raise missing_driver(url, url.drivername) from None
    except ImportError as error:
        raise missing_driver(url, error.name or str(error)) from None


def pool_for(
    url: str | URL, *, writable: bool = False, workers: int = DEFAULT_WORKERS
) -> DatabasePool:
    """The process's pool for ``url`` (created on first use; ``DatabaseConfigError`` when
    the URL's driver is not installed)."""
    parsed = parse_url(url)
    key = (parsed.render_as_string(hide_password=False), writable)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            rules = rules_for(parsed.get_backend_name())
            engine = _engine(parsed, rules, writable=writable, workers=workers)
            executor = ThreadPoolExecutor(workers, thread_name_prefix="threadline-sql")
            pool = _POOLS[key] = DatabasePool(parsed, rules, writable, engine, executor)
        return pool


def dispose_pools() -> None:
    """Close every pool of this process (tests, and shutdown)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.dispose()
