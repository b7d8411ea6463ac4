"""``DataAccess``: one configured database, and each person's queries run as their own data
identity in it ("data follows the asker").

It is the ``SqlRunner`` the built-in tools hold: ``for_user(user)`` gives the runner of that
person's queries (``agent_core.database.identity`` decides who they are), so ``run_sql``,
``visualize_data`` and ``query_files``' join all run as the asker. Per identity it also
keeps what the model may learn: the schema index filtered to the tables the identity may
read (PostgreSQL: per role, ``agent_core.database.visibility``; other dialects: the catalog
of the identity's own URL). ``resolver`` marks each resolved user with their identity's
key (memories and verified examples are shared only within one), ``gate`` refuses a turn
of someone with no data access, and ``startup`` / ``check`` report each mapped identity.

For scheduled questions and other callers without a turn::

    access = DataAccess(config, name="finance", data_dir=data_dir)
    identity = access.identity(user)          # NoDataAccess when refused
    result = await access.runner(identity).run_sql("SELECT ...")

>>> import os, sqlite3, tempfile
>>> from agent_core.database.settings import DatabaseConfig
>>> path = os.path.join(tempfile.mkdtemp(), "t.db"); sqlite3.connect(path).close()
>>> access = DataAccess(DatabaseConfig(url=f"sqlite:///{path}"))
>>> access.identity(User(id="ana")).is_default, access.dialect
(True, 'SQLite')
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from sqlalchemy.engine import URL

from agent_core.database.identity import DataIdentity, NoDataAccess, data_identity
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.schema_index import SchemaIndex
from agent_core.database.schema_source import SchemaSource, cache_path_for
from agent_core.database.settings import DatabaseConfig
from agent_core.database.urls import DatabaseConfigError, backend_of, mask_url, parse_url
from agent_core.database.visibility import RoleViews
from agent_core.tools.sql import SqlError, SqlResult, SqlRunner
from agent_core.users import User

logger = logging.getLogger("threadline.database")

NOBODY = User(id="")
"""Who a query without a person runs as: the unmapped rule applies to it."""


class DataAccess(SqlRunner):
    """One configured database (``[database]`` or a profile's) and who runs as whom in it;
    see the module docstring."""

    def __init__(
        self, config: DatabaseConfig, *, name: str = "default", data_dir: Path | None = None
    ) -> None:
        if not config.url:
            raise DatabaseConfigError(f"the database {name!r} has no url")
        self.config = config
        self.name = name
        self.data_dir = data_dir
        self._bases: dict[tuple[str, str | None], SqlAlchemyRunner] = {}
        self._sources: dict[str | None, SchemaSource] = {}
        self._views: dict[str | None, RoleViews] = {}
        self.checked = threading.Event()
        """Set once the start-up check of the database's own URL is over."""
        self.refusal: str | None = None
        """Why the start-up check refused the database (a superuser...): nothing may run."""
        self.default = self._base(config.url, None)
        for url in config.urls.values():
            self._base(url, None)  # a URL whose driver is missing fails now, not mid-question
        self.dialect = self.default.dialect
        self.parser_dialect = self.default.parser_dialect

    # -- who runs as whom ------------------------------------------------------------------

    @property
    def url(self) -> object:
        """The database's own URL (what ``query_files`` would join for the default)."""
        return self.default.url

    @property
    def masked_url(self) -> str:
        return self.default.masked_url

    def identity(self, user: User) -> DataIdentity:
        """``user``'s data identity here (``NoDataAccess`` when refused)."""
        return data_identity(user, self.config, database=self.name)

    def runner(self, identity: DataIdentity) -> SqlAlchemyRunner:
        """The runner of ``identity``'s queries: its URL's pool, as its role (PostgreSQL:
        in each transaction; Snowflake: a connection with ``role=``)."""
        url = self.config.urls[identity.url_name] if identity.url_name else self.config.url
        assert url is not None
        backend = backend_of(url)
        base = self._base(url, identity.role if backend == "snowflake" else None)
        return base.as_identity(identity) if backend == "postgresql" else base

    def for_user(self, user: User) -> AskerRunner:
        """``user``'s runner: their queries and their schema (``NoDataAccess`` when
        refused)."""
        return AskerRunner(self, self.identity(user))

    def _base(self, url: str, role: str | None) -> SqlAlchemyRunner:
        runner = self._bases.get((url, role))
        if runner is None:
            runner = SqlAlchemyRunner(
                role_url(url, role),
                functions=self.config.allowed_functions,
                allow_privileged=self.config.allow_privileged_user,
            )
            self._bases[(url, role)] = runner
        return runner

    # -- the SqlRunner contract, for callers without a person -------------------------------

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        """A query nobody in particular asked: run as the unmapped rule says."""
        return await self.for_user(NOBODY).run_sql(sql, max_rows=max_rows, timeout=timeout)

    async def describe(self) -> str:
        return await self.default.describe()

    # -- what the model may learn ----------------------------------------------------------

    def source(self, url_name: str | None = None) -> SchemaSource:
        """The schema source of the database's URL, or of a ``[database.urls]`` entry."""
        source = self._sources.get(url_name)
        if source is None:
            url = self.config.urls[url_name] if url_name else self.config.url
            assert url is not None
            runner = self._base(url, None)
            cache = cache_path_for(self.data_dir, runner) if self.data_dir else None
            source = SchemaSource(runner, cache_path=cache, training_dir=self.config.training_dir)
            self._sources[url_name] = source
        return source

    async def schema(self, identity: DataIdentity) -> SchemaIndex | None:
        """The schema index ``identity`` may see (None while its database is unreachable;
        ``SqlError`` when the database cannot say what the role may read)."""
        source = self.source(identity.url_name)
        index = await source.current()
        if index is None or source.runner.backend != "postgresql":
            return index
        views = self._views.setdefault(identity.url_name, RoleViews(source.runner))
        return await views.index(index, identity.role)

    async def schema_for(self, user: User) -> tuple[SchemaIndex | None, str | None]:
        """``user``'s schema index, or None and why not (for the prompt)."""
        try:
            identity = self.identity(user)
        except NoDataAccess as refused:
            return None, str(refused)
        try:
            index = await self.schema(identity)
        except SqlError as error:
            logger.warning("schema for %s not read: %s", identity.label, error)
            return None, str(error)
        return index, self.source(identity.url_name).error

    # -- start-up ------------------------------------------------------------------------

    @property
    def started(self) -> threading.Event:
        """Set once the start-up checks and the first introspection are over."""
        return self.source().started

    async def startup(self) -> None:
        """Check the database and every mapped identity (logged, loudly when one fails),
        then read the schema; never raises."""
        from agent_core.database.access_checks import check_access, log_access
        from agent_core.database.checks import check_database

        source = self.source()
        try:
            database = await check_database(self.default)
            self.refusal = database.error if database.refused else None
            self.checked.set()
            log_access(await check_access(self, database=database))
            if database.reachable and not database.refused:
                await source.refresh_quietly()
            else:
                source.unreachable(database.error)
        finally:
            self.checked.set()
            source.started.set()

    def start(self) -> threading.Thread:
        """Run ``startup`` on a thread of its own (callers need no event loop)."""
        self.source().load_cache()
        thread = threading.Thread(
            target=asyncio.run, args=(self.startup(),), name="threadline-schema", daemon=True
        )
        thread.start()
        return thread

    # -- what people and admins are told ---------------------------------------------------

    def mapping_lines(self) -> list[str]:
        """The mapping, as ``/status`` shows it to admins (URLs masked)."""
        where = "" if self.name == "default" else f" ({self.name})"
        lines = [f"Database{where}: {self.dialect}, `{self.masked_url}`"]
        lines += [f"- `{key}` -> `{mask_url(url)}`" for key, url in self.config.urls.items()]
        lines += [f"- `{key}` -> role `{role}`" for key, role in self.config.roles.items()]
        if self.config.maps_people:
            lines.append(f"- anyone else: {self.config.unmapped}")
        return lines


def role_url(url: str, role: str | None) -> URL:
    """``url`` connecting as ``role`` (Snowflake's ``role`` connection parameter: a value the
    driver sends, never SQL); ``url`` as it is without one.

    >>> role_url("snowflake://me@acct/db/public", "ANALYST").query["role"]
    'ANALYST'
    """
    parsed = parse_url(url)
    return parsed if role is None else parsed.update_query_dict({"role": role})


class AskerRunner(SqlRunner):
    """One person's queries and schema in a ``DataAccess``: what ``for_user`` gives the
    tools (and scheduled questions: ``run_sql`` runs as the identity, ``describe`` renders
    only the tables it may read).
    """

    def __init__(self, access: DataAccess, identity: DataIdentity) -> None:
        self.access = access
        self.identity = identity
        self.runner = access.runner(identity)
        self.dialect = self.runner.dialect
        self.parser_dialect = self.runner.parser_dialect

    @property
    def url(self) -> object:
        """The identity's database URL (what ``query_files`` may join)."""
        return self.runner.url

    @property
    def identity_label(self) -> str | None:
        return self.identity.label

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        return await self.runner.run_sql(sql, max_rows=max_rows, timeout=timeout)

    async def describe(self) -> str:
        index = await self.access.schema(self.identity)
        return index.catalog.render() if index is not None else ""
