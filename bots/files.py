"""Files shared with a question, in both bots: downloaded by the channel's adapter, loaded
into the asker's tables of the conversation (``agent_core.database.file_tables``), and
announced to the LLM with the question; ``query_files`` reads them.

A file is read only when the asker shared it themselves (a file someone else shared in the
channel is refused, never downloaded), at most ``MAX_FILES`` per message and
``FileLimits.max_bytes`` each. What could not be read is told to the asker (a warning
before the answer) and to the LLM (so it does not pretend it saw the file).

>>> import asyncio, tempfile
>>> from pathlib import Path
>>> from agent_core.database.file_tables import FileTables
>>> files = SharedFiles(FileTables(Path(tempfile.mkdtemp())))
>>> ana = SharedFile(name="a.csv", url="u", owner="ana")
>>> async def fetch(file):
...     return b"n\\n1\\n"
>>> taken = asyncio.run(files.take([ana], asker="ben", scope="s", fetch=fetch))
>>> taken.problems
['a.csv was shared by someone else; I only read files you share yourself']
"""

from __future__ import annotations

import atexit
import logging
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.files import FileRefused, SharedFile
from agent_core.components import NotificationComponent, SimpleTextComponent, UiComponent
from agent_core.database.file_formats import FileLoadError
from agent_core.database.file_tables import FileLimits, FileTable, FileTables
from agent_core.tools.files import JoinedDatabase, QueryFilesTool, files_note
from agent_core.tools.registry import ToolRegistry
from agent_core.tools.sql import RunSqlTool
from bots.agents import ServedAgent

if TYPE_CHECKING:
    from bots.serving import Config

logger = logging.getLogger(__name__)

MAX_FILES = 10
Fetch = Callable[[SharedFile], Awaitable[bytes]]


@dataclass
class FilesTaken:
    """What became of one message's files: the tables made, and what could not be read."""

    tables: list[FileTable] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def question(self, text: str) -> str:
        """The question as the LLM gets it: the text, then what the files became."""
        return text + files_note(self.tables, self.problems)

    def notice(self) -> UiComponent | None:
        """The warning the asker sees before the answer, when a file could not be read."""
        if not self.problems:
            return None
        message = "\n".join(f"• {problem}" for problem in self.problems)
        return UiComponent(
            rich_component=NotificationComponent(
                message=message, title="Some files could not be read", level="warning"
            ),
            simple_component=SimpleTextComponent(text=message),
        )


class SharedFiles:
    """The bots' side of shared files; see the module docstring."""

    def __init__(self, tables: FileTables, *, allow_http: bool = False) -> None:
        self.tables = tables
        self.allow_http = allow_http
        """Plain-http download links (Teams): local fakes only."""

    @property
    def max_bytes(self) -> int:
        return self.tables.limits.max_bytes

    async def take(
        self, files: Sequence[SharedFile], *, asker: str, scope: str | None, fetch: Fetch
    ) -> FilesTaken:
        """Download and load the asker's own ``files`` into ``scope``."""
        taken = FilesTaken()
        self.tables.sweep()
        for index, file in enumerate(files):
            if index >= MAX_FILES:
                taken.problems.append(f"{file.name}: I read at most {MAX_FILES} files a message")
            elif not file.owner or file.owner != asker:
                taken.problems.append(
                    f"{file.name} was shared by someone else; I only read files you share yourself"
                )
            elif scope is None:
                taken.problems.append(f"{file.name}: I cannot keep files here")
            else:
                await self._take_one(file, scope, fetch, taken)
        return taken

    async def _take_one(
        self, file: SharedFile, scope: str, fetch: Fetch, taken: FilesTaken
    ) -> None:
        try:
            content = await fetch(file)
            taken.tables += await self.tables.add(scope, file.name, content)
        except (FileRefused, FileLoadError) as error:
            logger.info("a shared file was not read: %s", type(error).__name__)
            taken.problems.append(without_paths(str(error), file.name))

    def serve(self, agent: ServedAgent) -> None:
        """Give every agent ``agent`` serves the ``query_files`` tool, unless it has one or
        its profile named its tools (``tools = [...]``: nothing is added to those). Its
        database is joined only through the agent's ``run_sql`` (``JoinedDatabase``)."""
        for served in agent.served_agents():
            registry = served.tool_registry
            if not registry.narrowed and registry.peek(QueryFilesTool.name) is None:
                tool = QueryFilesTool(self.tables, database=_joined(registry))
                registry.register_local_tool(tool, [])


def _joined(registry: ToolRegistry) -> JoinedDatabase | None:
    """``run_sql``'s database and groups, when the agent has a ``run_sql`` with a runner."""
    run_sql = registry.peek(RunSqlTool.name)
    if not isinstance(run_sql, RunSqlTool):
        return None
    return JoinedDatabase(run_sql.runner, registry.access_groups(RunSqlTool.name))


_PATH = re.compile(r"""(["'])(?:/|[A-Za-z]:\\)[^"']*\1|(?<![\w.])/(?:[^\s/"',]+/)+[^\s"',]*""")


def without_paths(text: str, name: str) -> str:
    """``text`` with every file path in it replaced by ``name``: what the asker and the
    model are told never names a place on the server (the data directory, a temporary
    folder) that a reader's message (DuckDB's, say) quoted.

    >>> without_paths('Malformed JSON in file "/srv/data/files/tmpx/a.json", at byte 2', "a.json")
    'Malformed JSON in file "a.json", at byte 2'
    >>> without_paths("Footer length error in file '/tmp/q/b.parquet'", "b.parquet")
    "Footer length error in file 'b.parquet'"
    >>> without_paths("n/a and 3/4 stay", "c.csv")
    'n/a and 3/4 stay'
    """

    def named(match: re.Match[str]) -> str:
        quote = match.group(1) or ""
        return f"{quote}{name}{quote}"

    return _PATH.sub(named, text)


async def take_files(
    store: SharedFiles | None,
    files: Sequence[SharedFile],
    *,
    asker: str,
    scope: str | None,
    fetch: Fetch,
) -> FilesTaken:
    """``store.take(...)``; without a store, each file is told it cannot be read here."""
    if store is not None:
        return await store.take(files, asker=asker, scope=scope, fetch=fetch)
    reason = (
        "this bot cannot read shared files (they are turned off, or its 'files' extra is "
        "not installed: pip install 'threadline[files]')"
    )
    return FilesTaken(problems=[f"{file.name}: {reason}" for file in files])


def shared_files_store(config: Config) -> SharedFiles | None:
    """The store of the configured ``[database]`` files settings, under the data directory
    (a temporary one with ``--ephemeral``); None when files are off or the ``files`` extra is
    missing (logged once)."""
    from bots.extras import missing

    if not config.database.files:
        return None
    if absent := missing("files"):
        logger.warning(
            "shared files are not read: pip install 'threadline[files]' (missing %s)",
            ", ".join(absent),
        )
        return None
    state = config.state
    root = (
        Path(tempfile.mkdtemp(prefix="threadline-files-"))
        if state.ephemeral
        else (state.data_dir / "files")
    )
    if state.ephemeral:
        atexit.register(shutil.rmtree, root, True)
    limits = FileLimits(max_bytes=int(config.database.files_max_mb * 1024 * 1024))
    return SharedFiles(FileTables(root, limits=limits))
