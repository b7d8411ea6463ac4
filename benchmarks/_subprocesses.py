"""Helper processes a benchmark starts from its own script: each is ready once it prints
``ready``; every line it prints after that goes to the benchmark's ``on_line``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


class ReadyProcesses:
    """``python SCRIPT ARGS...`` processes (one per argument list), run from ``cwd``."""

    def __init__(self, script: str, cwd: Path, on_line: Callable[[bytes], None]) -> None:
        self.script = script
        self.cwd = cwd
        self.on_line = on_line
        self.processes: list[asyncio.subprocess.Process] = []
        self._readers: list[asyncio.Task[None]] = []

    async def start(self, arguments: Sequence[Sequence[str]]) -> None:
        """Start one process per argument list; return once every one is ready."""

        async def one(args: Sequence[str]) -> asyncio.subprocess.Process:
            process = await asyncio.create_subprocess_exec(
                sys.executable, self.script, *args, stdout=asyncio.subprocess.PIPE, cwd=self.cwd
            )
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line.strip() == b"ready", line
            return process

        for process in await asyncio.gather(*(one(args) for args in arguments)):
            self.processes.append(process)
            self._readers.append(asyncio.create_task(self._read(process)))

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            self.on_line(line)

    async def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            await process.wait()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
