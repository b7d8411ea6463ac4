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

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import NoSuchModuleError

from agent_core.database.dialects import DialectRules, rules_for
from agent_core.database.limits import EngineLimits
from agent_core.database.urls import missing_driver, parse_url

DEFAULT_WORKERS = 4


@dataclass(frozen=True, kw_only=True)
class PoolOptions:
    """What a pool's connections are opened with; runners that differ here never share one.

    >>> PoolOptions().writable, PoolOptions().allow_privileged
    (False, False)
    """

    writable: bool = False
    allow_privileged: bool = False
    """Keep a PostgreSQL superuser's connections (a sandbox; ``agent_core.database
    .privileges``)."""
    limits: EngineLimits = field(default_factory=EngineLimits)


@dataclass
class DatabasePool:
    """The engine and the threads of one database URL."""

    url: URL
    rules: DialectRules
    options: PoolOptions
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
        """Close the pool: queued queries dropped, running ones let finish (each is bounded
        by its timeout and cancelled at it), so every connection is back and closed."""
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.cancellers.shutdown(wait=True, cancel_futures=True)
        self.engine.dispose()


_POOLS: dict[tuple[str, PoolOptions], DatabasePool] = {}
_LOCK = threading.Lock()


def _engine(url: URL, rules: DialectRules, options: PoolOptions, *, workers: int) -> Engine:
    arguments: dict[str, Any] = {
        "pool_pre_ping": True,  # a database that restarted is reconnected to, not an error
        "pool_size": workers,
        "max_overflow": 2,  # room for cancels and introspection next to busy workers
        "pool_recycle": 1800,
        "pool_reset_on_return": None,  # the reset below rolls back, then discards
    }
    writable, limits = options.writable, options.limits
    creator = rules.creator(url, writable=writable, limits=limits)
    if creator is not None:
        arguments["creator"] = creator
    else:
        arguments["connect_args"] = rules.connect_args(url, writable=writable, limits=limits)
    try:
        engine = create_engine(url, **arguments)
    except NoSuchModuleError:
        raise missing_driver(url, url.drivername) from None
    except ImportError as error:
        raise missing_driver(url, error.name or str(error)) from None
    _listen(engine, rules, options)
    return engine


def _listen(engine: Engine, rules: DialectRules, options: PoolOptions) -> None:
    """Every new connection checked, every returned one rolled back and its session
    discarded (``DialectRules``)."""

    def connected(dbapi_connection: Any, _record: Any) -> None:
        rules.on_connect(dbapi_connection, allow_privileged=options.allow_privileged)

    def reset(dbapi_connection: Any, _record: Any, state: Any) -> None:
        if not state.terminate_only:
            engine.dialect.do_rollback(dbapi_connection)
            rules.discard_session(dbapi_connection)

    event.listen(engine, "connect", connected)
    event.listen(engine.pool, "reset", reset)


def pool_for(
    url: str | URL, options: PoolOptions | None = None, *, workers: int = DEFAULT_WORKERS
) -> DatabasePool:
    """The process's pool for ``url`` opened with ``options`` (created on first use;
    ``DatabaseConfigError`` when the URL's driver is not installed)."""
    parsed = parse_url(url)
    options = options or PoolOptions()
    key = (parsed.render_as_string(hide_password=False), options)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            rules = rules_for(parsed.get_backend_name())
            engine = _engine(parsed, rules, options, workers=workers)
            executor = ThreadPoolExecutor(workers, thread_name_prefix="threadline-sql")
            pool = _POOLS[key] = DatabasePool(parsed, rules, options, engine, executor)
        return pool


def dispose_pools() -> None:
    """Close every pool of this process (tests, and shutdown)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.dispose()
