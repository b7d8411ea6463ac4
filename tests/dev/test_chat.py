"""`threadline chat`: the terminal chat over the demo agent, in-process and in a real terminal
(tmux: the screen a person sees, the keys a person types)."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel
from rich.console import Console

from agent_core import (
    InMemoryAgentMemory,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
)
from agent_core.agent import Agent
from agent_core.components import ChartComponent, ChartSeries, UiComponent
from bots.dev.chat import ChatSession
from bots.dev.chat_view import ChatView
from bots.dev.terminal_images import inline, protocol
from tests.support.calendar import Moment, faked_env
from tests.support.demo_shop import shop_month, top_customer

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who are our top customers by revenue?"


def tiny_png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (20, 100, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def session(agent: Agent, tmp_path: Path) -> tuple[ChatSession, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None, force_terminal=False)
    return ChatSession(agent, console, tmp_path / "charts"), out


async def test_an_answer_is_printed_once_then_the_tables_it_cites(
    agent: Agent, tmp_path: Path
) -> None:
    """Issue 13 regression: the answer's sources arrive just before its final text, and the
    chat printed them mid-answer, ending the live answer, so the whole answer was printed a
    second time. Now the sources line follows the answer, once, without the SQL."""
    chat, out = session(agent, tmp_path)
    assert await chat.ask(QUESTION) is True
    text = out.getvalue()
    assert text.count("Together they account for") == 1
    cited = "Sources: customers, orders, order_items · 1 query · 10 rows"
    assert text.index(cited) > text.index("Together they account for")
    assert "SELECT" not in text


async def test_an_answer_is_rendered_with_a_table_and_a_saved_chart(
    agent: Agent, tmp_path: Path, data_dir: Path
) -> None:
    chat, out = session(agent, tmp_path)
    assert await chat.ask("") is True  # the welcome, with numbered suggestions
    assert f"1. {QUESTION}" in out.getvalue()
    assert chat.command("1") == QUESTION
    assert await chat.ask(QUESTION) is True
    text = out.getvalue()
    # rendered Markdown: the answer's emphasis and code marks are gone (they showed raw)
    assert "Scripted demo model (no ANTHROPIC_API_KEY set)" in text
    assert "_Scripted" not in text and "`ANTHROPIC_API_KEY`" not in text and "**" not in text
    assert "Together they account for" in text
    top, revenue = top_customer(data_dir)  # the shop covers the two years before this month
    assert top in text and revenue in text
    [chart] = chat.saved_charts
    assert chart.parent == tmp_path / "charts" and chart.read_bytes().startswith(b"\x89PNG")
    assert str(chart) in text.replace("\n", "")


async def test_admin_switch_shows_the_private_detail(agent: Agent, tmp_path: Path) -> None:
    chat, out = session(agent, tmp_path)
    assert chat.command("/admin") is None
    await chat.ask("Sales by category")
    assert "only you:" in out.getvalue() and "run_sql arguments" in out.getvalue()
    assert "FROM order_items oi" in out.getvalue()  # the SQL as code, not escaped JSON
    assert chat.command("/user") is None
    out.truncate(0)
    await chat.ask("Sales by category")
    assert "run_sql arguments" not in out.getvalue()
    assert chat.command("/help") == "/help"  # the agent's commands pass through


def test_a_deletion_waits_for_a_yes(agent: Agent, tmp_path: Path) -> None:
    """After /memories, typing "1" deleted a memory without a word."""
    chat, out = session(agent, tmp_path)
    asked: list[str] = []

    def say(answer: str):  # type: ignore[no-untyped-def]
        def ask(prompt: str) -> str:
            asked.append(prompt)
            return answer

        return ask

    assert chat.confirmed("/delete m1", say("")) is False
    assert chat.confirmed("/delete m1", say("n")) is False
    assert "Not deleted." in out.getvalue()
    assert chat.confirmed("/delete m1", say("y")) is True
    assert chat.confirmed("Sales by category", say("n")) is True  # nothing to delete
    assert asked == ["Delete memory m1? This cannot be undone. [y/N] "] * 3


def test_a_chart_without_a_picture_is_drawn_as_text(tmp_path: Path) -> None:
    out = io.StringIO()
    view = ChatView(Console(file=out, width=100, color_system=None), tmp_path)
    chart = ChartComponent(
        chart_type="bar",
        title="Units",
        x=["a", "bb"],
        series=[ChartSeries(name="n", values=[2, 4])],
    )
    view.show(UiComponent(rich_component=chart))
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["a", "█" * 20, "2"] and lines[2].split() == ["bb", "█" * 40, "4"]
    assert "threadline[charts]" in out.getvalue() and view.saved_charts == []


@pytest.mark.parametrize(
    ("kind", "start"),
    [
        ("kitty", "\x1b_Ga=T,f=100,"),
        ("iterm", "\x1b]1337;File=inline=1;"),
        ("sixel", '\x1bPq"1;1;2;2'),
    ],
)
def test_charts_show_inline_where_the_terminal_shows_pictures(
    kind: str, start: str, tmp_path: Path
) -> None:
    out = io.StringIO()
    view = ChatView(Console(file=out, force_terminal=True), tmp_path, kind)  # type: ignore[arg-type]
    from agent_core.components.images import png_data_uri

    chart = ChartComponent(
        chart_type="bar",
        title="Units",
        x=["a"],
        image_url=png_data_uri(tiny_png()),
        series=[ChartSeries(name="n", values=[1])],
    )
    view.show(UiComponent(rich_component=chart))
    assert start in out.getvalue() and view.saved_charts == []
    sequence = inline(tiny_png(), kind)  # type: ignore[arg-type]
    assert sequence.endswith(("\x1b\\", "\x07"))


def test_the_terminal_is_recognised_by_its_environment() -> None:
    assert protocol({"TERM": "foot"}) == "sixel"
    assert protocol({"KITTY_WINDOW_ID": "1", "TERM": "xterm-256color"}) == "kitty"
    assert protocol({"TERM_PROGRAM": "WezTerm"}) == "iterm"
    assert protocol({"TERM": "xterm-kitty", "THREADLINE_CHAT_IMAGES": "none"}) == "none"


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
        await read_until(process.stdout, "Threadline\n", seen)
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


class Tmux:
    """``threadline chat`` in a tmux pane: keys in, the screen out."""

    def __init__(self, name: str, command: str) -> None:
        self.name = name
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "60", command], check=True
        )

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def type(self, text: str) -> None:
        self.keys("-l", text)
        self.keys("Enter")

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-S", "-200", "-t", self.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def wait_for(self, text: str, *, after: int = 0) -> str:
        """The screen once ``text`` shows (bounded poll of another process)."""
        deadline = time.monotonic() + 60  # a pinned date builds its own demo shop first
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen[after:]:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")
def test_chat_in_a_real_terminal(tmp_path: Path, calendar_moment: Moment | None) -> None:
    data = tmp_path / "data"
    faked = " ".join(f"{k}={shlex.quote(v)}" for k, v in faked_env({}, calendar_moment).items())
    env = f"env -u ANTHROPIC_API_KEY TERM=xterm-256color {faked}"
    command = (
        f"cd {shlex.quote(str(ROOT))} && {env} {shlex.quote(sys.executable)} -m "
        f"bots.cli chat --scripted --data-dir {shlex.quote(str(data))}; sleep 60"
    )
    term = Tmux(f"tl-chat-{os.getpid()}", command)
    try:
        term.wait_for("user>")
        term.type(QUESTION)
        screen = term.wait_for("Together they account for")
        _, revenue = top_customer(data)
        assert revenue in screen
        if calendar_moment is not None:  # the chat's process lived at the moment too
            built = calendar_moment.local.astimezone(dt.UTC).date().replace(day=1)
            assert shop_month(data) == built and "**" not in screen and "_Scripted" not in screen
        [chart] = (data / "charts").glob("*top-10-customers-by-revenue.png")  # data dir
        assert str(chart) in screen.replace("\n", "")
        mark = len(term.wait_for("user>", after=screen.index("Together")))
        term.keys("Up")  # history: the question comes back to edit (Up printed ^[[A)
        term.wait_for(f"user> {QUESTION}", after=mark - 10)
        term.keys("C-u")
        term.type("/memories")
        screen = term.wait_for("2. /delete")
        term.type("1")  # a suggestion number that deletes: asked first
        screen = term.wait_for("This cannot be undone. [y/N]")
        term.type("n")
        term.wait_for("Not deleted.")
        term.type("/memories")
        listing = term.screen()
        term.wait_for("2. /delete", after=listing.rindex("Not deleted."))
        assert "Memory deleted" not in term.screen()
        assert (data / "chat_history").read_text().count(QUESTION) == 1
        assert "\n+y\n" not in (data / "chat_history").read_text()
    finally:
        term.close()


class _RefundArgs(BaseModel):
    order: int


class _Refund(Tool[_RefundArgs]):
    name = "refund"
    description = "Refund an order"
    approval = "always"

    def __init__(self) -> None:
        self.executions: list[int] = []

    def get_args_schema(self) -> type[_RefundArgs]:
        return _RefundArgs

    async def execute(self, context: ToolContext, args: _RefundArgs) -> ToolResult:
        self.executions.append(args.order)
        return ToolResult(success=True, result_for_llm=f"refunded {args.order}")


def refund_agent(tool: _Refund, *script: object) -> Agent:
    from bots.dev.identity import ConsoleUserResolver

    registry = ToolRegistry()
    registry.register_local_tool(tool, [])
    return Agent(
        llm_service=ScriptedLlmService([ScriptedResponse.tool("refund", {"order": 42}), *script]),
        tool_registry=registry,
        user_resolver=ConsoleUserResolver(),
        agent_memory=InMemoryAgentMemory(),
    )


@pytest.mark.parametrize(("said", "ran", "answer"), [("y", [42], "Refunded."), ("", [], "Kept.")])
async def test_a_tool_that_needs_approval_asks_y_n_and_the_answer_goes_on(
    tmp_path: Path, said: str, ran: list[int], answer: str
) -> None:
    tool = _Refund()
    chat, out = session(refund_agent(tool, answer), tmp_path)
    assert await chat.ask("refund order 42") is True
    assert "Waiting for approval" in out.getvalue() and tool.executions == []
    assert chat.approval_question() == "Approve refund? [y/N] "
    await chat.decide(said == "y")
    assert tool.executions == ran
    assert chat.approval_question() is None
    text = out.getvalue()
    assert answer in text and ("Approved by you" if ran else "Denied by you") in text
