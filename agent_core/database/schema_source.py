"""``SchemaSource``: the database's current ``SchemaIndex``: cached on disk, refreshed on a
schedule, and honest about a database that cannot be reached.

Start-up (``start``, on a thread of its own so no caller waits): check the database
(``agent_core.database.checks``: logged, loudly when the user can write or the database is
unreachable), then introspect it and write the cache. A cache from an earlier run (or from
``threadline train``) is used at once, so a restart does not wait for introspection.

Unreachable database policy: Threadline starts anyway. Every turn gets a line in its
prompt saying the database could not be reached, so the model tells the asker instead of
guessing; ``run_sql`` answers ``unavailable``; and the next turn after ``retry_every``
seconds tries again, so service resumes by itself when the database is back.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agent_core.database.catalog import Catalog
from agent_core.database.checks import check_database, log_report
from agent_core.database.introspection import introspect
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_index import SchemaIndex
from agent_core.database.training import Training, load_training
from agent_core.tools.sql import SqlError
from agent_core.users import User

logger = logging.getLogger("threadline.database")

INTROSPECTION_TIMEOUT = 300.0


def cache_path_for(data_dir: Path, runner: SqlAlchemyRunner) -> Path:
    """``DATA_DIR/schema/<backend>-<hash of the URL without password>.json``."""
    digest = hashlib.sha256(runner.masked_url.encode()).hexdigest()[:16]
    return data_dir / "schema" / f"{runner.backend}-{digest}.json"


class SchemaSource:
    """Keeps the ``SchemaIndex`` of ``runner``'s database (see the module docstring).

    ``refresh_every``: seconds before a loaded catalog is introspected again (in the
    background; the old one serves meanwhile). ``retry_every``: seconds between attempts
    while the database is unreachable.

    >>> import os, sqlite3, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> sqlite3.connect(path).execute("CREATE TABLE t (x)").close()
    >>> source = SchemaSource(SqlAlchemyRunner.sqlite(path))
    >>> [table.name for table in asyncio.run(source.refresh()).catalog.tables]
    ['t']
    """

    def __init__(
        self,
        runner: SqlAlchemyRunner,
        *,
        cache_path: Path | None = None,
        training_dir: Path | None = None,
        refresh_every: float = 3600.0,
        retry_every: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runner = runner
        self.cache_path = cache_path
        self.training_dir = training_dir
        self.refresh_every = refresh_every
        self.retry_every = retry_every
        self._clock = clock
        self._lock = threading.Lock()
        self._index: SchemaIndex | None = None
        self._loaded_at: float | None = None
        self._attempted_at: float | None = None
        self._refreshing = False
        self.error: str | None = None
        """Why the last attempt to reach the database failed (``None``: it worked)."""
        self.started = threading.Event()
        """Set when the start-up check and first introspection are over (either way)."""

    # -- reading -------------------------------------------------------------------------

    @property
    def index(self) -> SchemaIndex | None:
        return self._index

    @property
    def dialect(self) -> str:
        return self.runner.dialect

    async def schema_for(self, user: User) -> tuple[SchemaIndex | None, str | None]:
        """The same index for everyone (``SchemaProvider``); with people mapped to data
        identities, ``agent_core.database.access.DataAccess`` gives each their own."""
        return await self.current(), self.error

    def training(self) -> Training:
        if self.training_dir is None or not self.training_dir.is_dir():
            return Training()
        return load_training(self.training_dir)

    def load_cache(self) -> bool:
        """Use the cached catalog, if there is one (it counts as stale: refreshed soon)."""
        if self.cache_path is None or not self.cache_path.is_file():
            return False
        try:
            catalog = Catalog.model_validate_json(self.cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            logger.warning("schema cache %s is unreadable; ignoring it", self.cache_path)
            return False
        self._index = SchemaIndex(catalog, self.training())
        return True

    async def current(self) -> SchemaIndex | None:
        """The index to use now; refreshes first when there is none (and a retry is due),
        in the background when the one there is has aged past ``refresh_every``."""
        if self._index is None:
            if self._due(self.retry_every):
                await self._refresh_quietly()
            return self._index
        if self._loaded_at is None or self._due(self.refresh_every, self._loaded_at):
            self._refresh_in_background()
        return self._index

    def _due(self, interval: float, since: float | None = None) -> bool:
        last = self._attempted_at if since is None else since
        return last is None or self._clock() - last >= interval

    # -- refreshing ----------------------------------------------------------------------

    async def refresh(self) -> SchemaIndex:
        """Introspect now, use the result and cache it (``SqlError`` when unreachable)."""
        self._attempted_at = self._clock()
        try:
            catalog = await self.runner.with_connection(introspect, timeout=INTROSPECTION_TIMEOUT)
        except SqlError as error:
            self.error = str(error)
            raise
        index = SchemaIndex(catalog, self.training())
        with self._lock:
            self._index, self._loaded_at, self.error = index, self._clock(), None
        self._write_cache(catalog)
        return index

    def unreachable(self, error: str | None) -> None:
        """The start-up check found the database unreachable: say so until the retry."""
        self.error = error
        self._attempted_at = self._clock()

    async def refresh_quietly(self) -> None:
        """``refresh``, logged instead of raised; one at a time."""
        await self._refresh_quietly()

    async def _refresh_quietly(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        try:
            await self.refresh()
            logger.info(
                "database schema loaded: %d tables", len(self._index.tables) if self._index else 0
            )
        except SqlError as error:
            logger.warning("database %s unreachable: %s", self.runner.masked_url, error)
        finally:
            with self._lock:
                self._refreshing = False

    def _refresh_in_background(self) -> None:
        self._attempted_at = self._loaded_at = self._clock()  # one refresh per interval
        task = asyncio.get_running_loop().create_task(self._refresh_quietly())
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    def _write_cache(self, catalog: Catalog) -> None:
        if self.cache_path is None:
            return
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.cache_path.with_suffix(".tmp")
            temporary.write_text(catalog.model_dump_json(), encoding="utf-8")
            temporary.replace(self.cache_path)
        except OSError:
            logger.warning("could not write the schema cache %s", self.cache_path, exc_info=True)

    # -- start-up ------------------------------------------------------------------------

    async def startup(self) -> None:
        """The start-up check, then the first introspection; logs both, never raises."""
        try:
            report = await check_database(self.runner)
            log_report(report)
            if report.reachable:
                await self._refresh_quietly()
            else:
                self.error = report.error
                self._attempted_at = self._clock()
        finally:
            self.started.set()

    def start(self) -> threading.Thread:
        """Run ``startup`` on a thread of its own (callers need no event loop)."""
        self.load_cache()
        thread = threading.Thread(
            target=asyncio.run, args=(self.startup(),), name="threadline-schema", daemon=True
        )
        thread.start()
        return thread

    def describe_state(self) -> str:
        """One line for prompts and logs about the schema's freshness."""
        if self._index is None:
            return "the database schema is not loaded yet"
        at = dt.datetime.fromisoformat(self._index.catalog.introspected_at)
        return f"schema of {len(self._index.tables)} tables, read {at:%Y-%m-%d %H:%M} UTC"


_BACKGROUND: set[asyncio.Task[None]] = set()
