"""``threadline chat``: talk to the demo agent in a terminal.

Answers stream as they are written; tables are drawn with ``rich``; charts are saved as PNG
files (their path is printed); suggested prompts are numbered, so typing ``1`` asks the first.
``/user`` and ``/admin`` switch who is asking (admins also see tool arguments and errors,
marked "only you"); ``/new`` starts a new conversation; Ctrl-C stops the current answer and,
at the prompt, quits. Every other ``/command`` (``/help``...) goes to the agent.

Only stdlib is imported at module level: ``threadline`` builds every subcommand's parser at
start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from agent_core.components import RichComponent, UiComponent
    from bots.agents import ServedAgent
    from bots.dev.identity import Persona

TABLE_ROWS = 20
STATUS_STYLE = {
    "success": "green",
    "completed": "green",
    "info": "blue",
    "warning": "yellow",
    "error": "red",
    "failed": "red",
}
ROLES = {"user": ["user"], "admin": ["user", "admin"]}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.dev.local import add_local_arguments

    add_local_arguments(parser, stream_delay=0.02)
    parser.add_argument(
        "--charts-dir",
        type=Path,
        default=None,
        help="where charts are saved as PNG (default: a temporary directory)",
    )
    parser.add_argument(
        "--as",
        dest="role",
        choices=sorted(ROLES),
        default="user",
        help="start as a user (default) or an admin",
    )


class ChatSession:
    """One terminal conversation: sends messages, prints what the agent yields.

    >>> import io
    >>> from rich.console import Console
    >>> ChatSession(agent=None, console=Console(file=io.StringIO()),
    ...             charts_dir=Path(".")).persona.groups  # type: ignore[arg-type]
    ['user']
    """

    def __init__(self, agent: ServedAgent, console: Console, charts_dir: Path) -> None:
        from bots.dev.identity import Persona

        self.agent = agent
        self.console = console
        self.charts_dir = charts_dir
        self.persona: Persona = Persona(user_id="U0TERMINAL", name="you", place="dm")
        self.thread_id = os.urandom(4).hex()
        self.suggestions: list[str] = []
        self.saved_charts: list[Path] = []
        self._streamed: dict[str, int] = {}

    @property
    def prompt(self) -> str:
        return "admin" if "admin" in self.persona.groups else "user"

    # --- commands -----------------------------------------------------------------------------

    def command(self, line: str) -> str | None:
        """Handle a console command; returns the message to ask instead, or None when done.

        ``/user`` ``/admin`` ``/new`` and suggestion numbers are the console's; everything else
        is returned unchanged for the agent.
        """
        word = line.strip().lower()
        if word in ("/user", "/admin"):
            self.persona = self.persona.model_copy(update={"groups": ROLES[word[1:]]})
            self.console.print(
                f"[dim]Now asking as {word[1:]} (groups: {', '.join(self.persona.groups)}).[/dim]"
            )
            return None
        if word == "/new":
            self.thread_id = os.urandom(4).hex()
            self.console.print("[dim]New conversation.[/dim]")
            return None
        if word.isdigit() and 0 < int(word) <= len(self.suggestions):
            return self.suggestions[int(word) - 1]
        return line

    # --- a turn -------------------------------------------------------------------------------

    async def ask(self, text: str) -> bool:
        """Answer ``text``; False when the user stopped it (the task was cancelled)."""
        context = self.persona.request_context(self.thread_id)
        key = self.persona.conversation_id(self.thread_id)
        self._streamed.clear()
        try:
            async for component in self.agent.send_message(context, text, conversation_id=key):
                self.show(component)
        except asyncio.CancelledError:
            self._end_stream()
            self.console.print("[yellow](stopped)[/yellow]")
            return False
        self._end_stream()
        return True

    def show(self, component: UiComponent) -> None:
        rich = component.rich_component
        if not rich.visible:
            return
        if component.is_private:
            self.console.print("[dim italic]only you:[/dim italic]")
        if not self._show_rich(rich):
            simple = component.simple_component
            text = getattr(simple, "text", None) or getattr(simple, "url", None)
            if text:
                self.console.print(text, markup=False)

    def _show_rich(self, rich: RichComponent) -> bool:  # noqa: C901 - one case per type
        from agent_core import components as c

        match rich:
            case c.RichTextComponent():
                self._text(rich)
            case c.DataFrameComponent():
                self._table(rich)
            case c.ChartComponent():
                self._chart(rich)
            case c.CardComponent():
                self._panel(rich.title, rich.content, rich.status, markdown=rich.markdown)
            case c.NotificationComponent():
                self._panel(rich.title or rich.level.capitalize(), rich.message, rich.level)
            case c.StatusCardComponent():
                self._status(rich)
            case c.ButtonGroupComponent():
                self._suggest([b.action for b in rich.buttons if not b.disabled])
            case c.ButtonComponent():
                self._suggest([rich.action])
            case c.ProgressBarComponent() | c.ProgressDisplayComponent():
                label = rich.label or "Progress"
                self.console.print(f"[dim]{label}: {round(rich.value * 100)}%[/dim]")
            case c.StatusIndicatorComponent():
                self.console.print(f"[dim]{rich.message}[/dim]", markup=True)
            case c.StatusBarUpdateComponent() | c.TaskTrackerUpdateComponent():
                pass  # the streamed text and tool lines already show progress
            case c.ChatInputUpdateComponent():
                pass
            case _:
                return False
        return True

    def _text(self, text: Any) -> None:
        from rich.markdown import Markdown

        if text.id not in self._streamed and not text.streaming:
            self._end_stream()
            self.console.print(Markdown(text.content) if text.markdown else text.content)
            return
        shown = self._streamed.get(text.id)
        if shown is None:
            self._end_stream()
            self.console.print("[bold magenta]Threadline:[/bold magenta] ", end="")
            shown = 0
        self.console.print(
            text.content[shown:], end="", markup=False, highlight=False, soft_wrap=True
        )
        self._streamed[text.id] = len(text.content)
        if not text.streaming:
            self.console.print()
            self._streamed[text.id] = -1  # finished

    def _end_stream(self) -> None:
        if any(n >= 0 for n in self._streamed.values()):
            self.console.print()
        self._streamed = {k: -1 for k in self._streamed}

    def _table(self, df: Any) -> None:
        from rich.table import Table

        self._end_stream()
        table = Table(title=df.title, caption=df.description, show_lines=False)
        for column in df.columns:
            numeric = df.column_types.get(column) == "number"
            table.add_column(column, justify="right" if numeric else "left")
        for row in df.rows[:TABLE_ROWS]:
            table.add_row(*[_cell(row.get(column)) for column in df.columns])
        self.console.print(table)
        if df.row_count > min(len(df.rows), TABLE_ROWS):
            shown = min(len(df.rows), TABLE_ROWS)
            self.console.print(f"[dim]{shown} of {df.row_count:,} rows shown.[/dim]")

    def _chart(self, chart: Any) -> None:
        from agent_core.components.images import png_from_data_uri

        self._end_stream()
        png = png_from_data_uri(chart.image_url)
        if png is None:
            self.console.print(f"[dim]Chart {chart.title or ''}: no image to save.[/dim]")
            return
        self.charts_dir.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", (chart.title or "chart").lower()).strip("-")[:40]
        path = self.charts_dir / f"chart-{len(self.saved_charts) + 1}-{slug or 'chart'}.png"
        path.write_bytes(png)
        self.saved_charts.append(path)
        self.console.print(
            f"📊 [bold]{chart.title or 'Chart'}[/bold] saved to {path}", highlight=False
        )

    def _panel(self, title: str, body: str, status: str | None, *, markdown: bool = True) -> None:
        from rich.markdown import Markdown
        from rich.panel import Panel

        self._end_stream()
        content = Markdown(body) if markdown else body
        style = STATUS_STYLE.get(status or "", "cyan")
        self.console.print(Panel(content, title=title, border_style=style, expand=False))

    def _status(self, card: Any) -> None:
        if card.status in ("error", "failed"):
            self._panel(card.title, card.description or card.status, "error")
        elif card.status in ("completed", "success") and card.description:
            self._end_stream()
            self.console.print(f"[dim]✓ {card.title}: {card.description}[/dim]", highlight=False)
        elif card.status == "running":
            self._end_stream()
            self.console.print(f"[dim]… {card.title}[/dim]", highlight=False)

    def _suggest(self, actions: list[str]) -> None:
        if not actions:
            return
        self._end_stream()
        self.suggestions = actions
        lines = "\n".join(f"  [bold]{n}[/bold]. {a}" for n, a in enumerate(actions, start=1))
        self.console.print(f"[dim]Try (type the number):[/dim]\n{lines}", highlight=False)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def build_session(args: argparse.Namespace, console: Console) -> ChatSession:
    from bots.dev.local import local_agent

    charts = args.charts_dir or Path(tempfile.mkdtemp(prefix="threadline-charts-"))
    session = ChatSession(local_agent(args, "chat"), console, charts)
    session.persona = session.persona.model_copy(update={"groups": ROLES[args.role]})
    return session


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_core.settings import ConfigError
    from bots.apps import AppError

    console = Console(highlight=False)
    try:
        session = build_session(args, console)
    except (ConfigError, AppError) as error:
        print(f"threadline chat: {error}", file=sys.stderr)
        return 2
    console.print(
        f"[bold]Threadline chat[/bold] · {session.agent.llm_service.model_name}\n"
        "[dim]/user /admin switch who asks · /new new conversation · /help · "
        "Ctrl-C stops an answer · Ctrl-D quits[/dim]"
    )
    with asyncio.Runner() as runner:
        runner.run(session.ask(""))  # the starter UI: welcome and suggestions
        while True:
            try:
                line = input(f"\n{session.prompt}> ")
            except (EOFError, KeyboardInterrupt):
                console.print()
                return 0
            message = session.command(line) if line.strip() else None
            if message is not None:
                runner.run(session.ask(message))  # Ctrl-C cancels it: see ChatSession.ask


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="threadline chat")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
