"""`threadline chat`'s ``/file PATH`` (issue 13, item 2): the file goes with the next
question through the bots' ``bots.files`` path, becomes the asker's table of that
conversation, and the answer queries it; what could not be read is said, in the bots'
words, and the question is answered anyway."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from agent_core.agent import Agent
from agent_core.database.file_tables import FileLimits, FileTables
from bots.dev.chat import ChatSession
from bots.files import SharedFiles


def session(
    agent: Agent, tmp_path: Path, *, max_bytes: int = 64 * 1024
) -> tuple[ChatSession, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None, force_terminal=False)
    files = SharedFiles(FileTables(tmp_path / "files", limits=FileLimits(max_bytes=max_bytes)))
    return ChatSession(agent, console, tmp_path / "charts", files=files), out


async def test_an_attached_csv_is_queried(agent: Agent, tmp_path: Path) -> None:
    chat, out = session(agent, tmp_path)
    sales = tmp_path / "sales.csv"
    sales.write_text("region,units\nEU,3\nUS,5\nAPAC,2\n")
    assert chat.command(f"/file {sales}") is None
    assert "Attached sales.csv; it goes with your next question." in out.getvalue()
    assert await chat.ask("what's in this file?") is True
    text = out.getvalue()
    assert "sales.csv is the table sales: 3 rows, 2 columns" in text
    assert "APAC" in text and "query_files" in text
    assert chat.attached == []  # sent with that question only


async def test_unreadable_files_are_said_in_the_bots_words(agent: Agent, tmp_path: Path) -> None:
    chat, out = session(agent, tmp_path, max_bytes=1024)
    book, big = tmp_path / "book.xlsx", tmp_path / "big.csv"
    book.write_bytes(b"PK\x03\x04 not a workbook")
    big.write_bytes(b"n\n" + b"1\n" * 1024)
    assert chat.command(f"/file {book}") is None and chat.command(f"/file {big}") is None
    assert chat.command("/file /no/such/file.csv") is None
    assert "No file at /no/such/file.csv" in out.getvalue()
    assert await chat.ask("what's in these files?") is True
    text = " ".join(out.getvalue().replace("│", " ").split())  # the panel wraps lines
    assert "Some files could not be read" in text
    assert "book.xlsx is not a valid XLSX workbook" in text
    assert "big.csv is larger than 1 KB, the most I read; share a smaller extract" in text
    assert "I could not read the file you shared" in text
