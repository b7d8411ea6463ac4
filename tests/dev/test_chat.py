"""`threadline chat`: the terminal REPL over the demo agent."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
from pathlib import Path

from rich.console import Console

from agent_core.agent import Agent
from bots.dev.chat import ChatSession

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who are our top customers by revenue?"


def session(agent: Agent, tmp_path: Path) -> tuple[ChatSession, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None, force_terminal=False)
    return ChatSession(agent, console, tmp_path / "charts"), out


async def test_an_answer_streams_with_a_table_and_a_saved_chart(
    agent: Agent, tmp_path: Path
) -> None:
    chat, out = session(agent, tmp_path)
    assert await chat.ask("") is True  # the welcome, with numbered suggestions
    assert f"1. {QUESTION}" in out.getvalue()
    assert chat.command("1") == QUESTION
    assert await chat.ask(QUESTION) is True
    text = out.getvalue()
    assert "Threadline: _Scripted demo model" in text
    assert "Together they account for" in text
    assert "customer" in text and "Tidal Retail GmbH" in text and "968,424.30" in text
    [chart] = chat.saved_charts
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert str(chart) in text.replace("\n", "")


async def test_admin_switch_shows_the_private_detail(agent: Agent, tmp_path: Path) -> None:
    chat, out = session(agent, tmp_path)
    assert chat.command("/admin") is None
    await chat.ask("Sales by category")
    assert "only you:" in out.getvalue() and "run_sql arguments" in out.getvalue()
    assert chat.command("/user") is None
    out.truncate(0)
    await chat.ask("Sales by category")
    assert "run_sql arguments" not in out.getvalue()
    assert chat.command("/help") == "/help"  # the agent's commands pass through


async def read_until(stream: asyncio.StreamReader, marker: str, seen: list[str]) -> None:
    while marker not in "".join(seen):
        chunk = await asyncio.wait_for(stream.read(4096), timeout=20)
        assert chunk, f"output ended before {marker!r}: {''.join(seen)}"
        seen.append(chunk.decode())


async def test_ctrl_c_stops_the_answer_and_the_chat_goes_on(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bots.cli",
        "chat",
        "--scripted",
        "--stream-delay",
        "0.05",
        "--data-dir",
        str(tmp_path),
        "--charts-dir",
        str(tmp_path / "charts"),
        cwd=ROOT,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    seen: list[str] = []
    try:
        await read_until(process.stdout, "user> ", seen)
        process.stdin.write(f"{QUESTION}\n".encode())
        await read_until(process.stdout, "Threadline:", seen)
        process.send_signal(signal.SIGINT)
        await read_until(process.stdout, "(stopped)", seen)
        assert "Together they account for" not in "".join(seen)
        process.stdin.write(b"/help\n")
        await read_until(process.stdout, "Threadline commands", seen)
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), timeout=20) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
