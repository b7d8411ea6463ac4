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

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.files import FileRefused, SharedFile
from agent_core.components import NotificationComponent, SimpleTextComponent, UiComponent
from agent_core.database.file_formats import FileLoadError
from agent_core.database.file_tables import FileLimits, FileTable, FileTables
from agent_core.tools.files import QueryFilesTool, files_note
from bots.agents import ServedAgent

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

    def __init__(self, tables: FileTables) -> None:
        self.tables = tables

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
                    f"{file.name} was shared by someone else; I only read files you share "
                    "yourself"
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
            taken.problems.append(str(error))

    def serve(self, agent: ServedAgent) -> None:
        """Give every agent ``agent`` serves the ``query_files`` tool (unless it has one)."""
        for served in agent.served_agents():
            if served.tool_registry.peek(QueryFilesTool.name) is None:
                served.tool_registry.register_local_tool(QueryFilesTool(self.tables), [])


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
    reason = "this bot cannot read shared files (its 'files' extra is not installed)"
    return FilesTaken(problems=[f"{file.name}: {reason}" for file in files])


def shared_files_store(data_dir: Path | None, *, max_mb: float) -> SharedFiles | None:
    """The store under ``data_dir/files`` (None: files are not read, e.g. DuckDB is not
    installed: logged once)."""
    from bots.extras import missing

    if data_dir is None:
        return None
    absent = missing("files")
    if absent:
        logger.info("shared files are not read: pip install 'threadline[files]' (missing %s)",
                    ", ".join(absent))  # fmt: skip
        return None
    limits = FileLimits(max_bytes=int(max_mb * 1024 * 1024))
    return SharedFiles(FileTables(data_dir / "files", limits=limits))
