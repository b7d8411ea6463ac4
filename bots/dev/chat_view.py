"""How ``threadline chat`` shows what the agent yields, with ``rich``.

The answer streams as rendered Markdown (a ``rich`` ``Live`` view redrawn as text arrives:
bold is bold, code is code, never ``**``); tables are drawn with numbers as both channels
write them (``adapters.number_format``); cards and notices are panels; a chart is shown
inline where the terminal displays images (``terminal_images``), else saved as PNG under
the data directory with its path printed, or drawn as text bars when no PNG was rendered
(matplotlib is the ``[charts]`` extra). Suggested questions are numbered. A turn that ran
more than one step ends with its plan: each step with its mark, a group of parallel steps
with its steps under it, and after a Stop the steps that never finished marked stopped.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from adapters.number_format import format_number
from adapters.tasks import TASK_MARKS, TaskBoard, call_status_word
from bots.dev.terminal_images import Protocol, inline

if TYPE_CHECKING:
    from rich.console import Console

    from agent_core.components import RichComponent, ToolStatusComponent, UiComponent

TABLE_ROWS = 20
BAR_WIDTH = 40
STATUS_STYLE = {
    "success": "green",
    "completed": "green",
    "info": "blue",
    "warning": "yellow",
    "error": "red",
    "failed": "red",
}


def cell(value: Any) -> str:
    """A table cell: numbers as both channels write them, nothing as a dash."""
    if value is None:
        return "—"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


class ChatView:
    """Prints one turn's components to ``console``; ``suggestions`` holds the numbered
    questions last offered, ``saved_charts`` the PNG files written."""

    def __init__(self, console: Console, charts_dir: Path, images: Protocol = "none") -> None:
        self.console = console
        self.charts_dir = charts_dir
        self.images = images
        self.suggestions: list[str] = []
        self.saved_charts: list[Path] = []
        self._live: Live | None = None
        self._live_id: str | None = None
        self._sources = ""
        self.plan = TaskBoard()
        self.approval: Any = None
        """The approval the last turn waits for (an ``ApprovalComponent``), if any."""

    def show(self, component: UiComponent) -> None:
        rich = component.rich_component
        if not rich.visible:
            return
        if component.is_private:
            self.end_answer()
            self.console.print("[dim italic]only you:[/dim italic]")
        if not self._show_rich(rich):
            simple = component.simple_component
            text = getattr(simple, "text", None) or getattr(simple, "url", None)
            if text:
                self.end_answer()
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
                self._status(rich.title, rich.status, rich.description)
            case c.ToolStatusComponent():
                self._tool_call(rich)
            case c.ButtonGroupComponent():
                self._suggest([b.action for b in rich.buttons if not b.disabled])
            case c.ButtonComponent():
                self._suggest([rich.action])
            case c.ProgressBarComponent() | c.ProgressDisplayComponent():
                self._line(f"{rich.label or 'Progress'}: {round(rich.value * 100)}%")
            case c.StatusIndicatorComponent():
                self._line(rich.message)
            case c.TaskTrackerUpdateComponent():
                self.plan.apply(rich)  # the tool lines show progress; the plan ends the turn
            case c.TaskListComponent() if rich.as_plan:
                if self.plan.apply_plan(rich):
                    self._line(f"Plan: {self.plan.title()}")
            case c.StatusBarUpdateComponent():
                pass
            case c.ChatInputUpdateComponent():
                pass
            case c.SourcesComponent():
                self._sources = rich.summary()  # printed under the answer it cites
            case c.ApprovalComponent():
                self._approval(rich)
            case _:
                return False
        return True

    # --- the answer ---------------------------------------------------------------------------

    def _text(self, text: Any) -> None:
        content = str(text.content)
        if text.id != self._live_id:
            self.end_answer()
            if not text.streaming:
                self.console.print(Markdown(content) if text.markdown else content)
                self._cite()
                return
            self.console.print("[bold magenta]Threadline[/bold magenta]")
            self._live = Live(console=self.console, auto_refresh=False, vertical_overflow="visible")
            self._live.start()
            self._live_id = text.id
        assert self._live is not None
        self._live.update(Markdown(content) if text.markdown else content, refresh=True)
        if not text.streaming:
            self.end_answer()
            self._cite()

    def _cite(self) -> None:
        """The sources of the answer just finished, as one dim line (never its SQL)."""
        sources, self._sources = self._sources, ""
        if sources:
            self.console.print(sources, style="dim", highlight=False, markup=False)

    def end_answer(self) -> None:
        """Close the answer being streamed (its last rendering stays on screen)."""
        live, self._live, self._live_id = self._live, None, None
        if live is not None:
            live.stop()

    def end_turn(self, *, stopped: bool = False) -> None:
        """The turn is over: close the answer, then print its plan if it had two steps or
        more (its unfinished steps stopped when the user stopped it)."""
        self.end_answer()
        plan, self.plan = self.plan, TaskBoard()
        plan.end(stopped=stopped)
        if len(plan) < 2:
            return
        lines = [plan.title()]
        for task in plan.nested():
            indent = "     ↳ " if task.parent_id else "  "
            detail = f" · {task.detail}" if task.detail else ""
            lines.append(f"{indent}{TASK_MARKS[task.status]} {task.title}{detail}")
        self.console.print("\n".join(lines), style="dim", highlight=False, markup=False)

    # --- the rest -----------------------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.end_answer()
        self.console.print(text, style="dim", highlight=False, markup=False)

    def _table(self, df: Any) -> None:
        self.end_answer()
        table = Table(title=df.title, caption=df.description, show_lines=False)
        for column in df.columns:
            numeric = df.column_types.get(column) == "number"
            table.add_column(column, justify="right" if numeric else "left")
        for row in df.rows[:TABLE_ROWS]:
            table.add_row(*[cell(row.get(column)) for column in df.columns])
        self.console.print(table)
        shown = min(len(df.rows), TABLE_ROWS)
        if df.row_count > shown:
            self.console.print(f"[dim]{shown} of {df.row_count:,} rows shown.[/dim]")

    def _chart(self, chart: Any) -> None:
        from agent_core.components.images import png_from_data_uri

        self.end_answer()
        title = chart.title or "Chart"
        png = png_from_data_uri(chart.image_url)
        if png is None:
            self._text_chart(chart, title)
            return
        if self.images != "none" and self.console.is_terminal:
            self.console.print(f"📊 [bold]{escape(title)}[/bold]", highlight=False)
            self.console.file.write(inline(png, self.images) + "\n")
            self.console.file.flush()
            return
        self.charts_dir.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "chart"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self.charts_dir / f"{stamp}-{len(self.saved_charts) + 1}-{slug}.png"
        path.write_bytes(png)
        self.saved_charts.append(path)
        self.console.print(
            f"📊 [bold]{escape(title)}[/bold] saved to {escape(str(path))}", highlight=False
        )

    def _text_chart(self, chart: Any, title: str) -> None:
        """Bars of text for the first series: the chart without an image."""
        self.console.print(f"📊 [bold]{escape(title)}[/bold]", highlight=False)
        values = chart.series[0].values if chart.series else []
        largest = max((abs(v) for v in values if v is not None), default=0) or 1
        width = max((len(str(x)) for x in chart.x), default=0)
        for x, value in zip(chart.x, values, strict=False):
            bar = "█" * round(abs(value or 0) / largest * BAR_WIDTH)
            self.console.print(
                f"  {x!s:<{width}} {bar} {cell(value)}", highlight=False, markup=False
            )
        self.console.print(
            "(pip install 'threadline[charts]' for the chart as a picture)",
            style="dim",
            markup=False,
        )

    def _panel(self, title: str, body: str, status: str | None, *, markdown: bool = True) -> None:
        from adapters.details import readable

        self.end_answer()
        content = Markdown(readable(body)) if markdown else body
        style = STATUS_STYLE.get(status or "", "cyan")
        self.console.print(Panel(content, title=title, border_style=style, expand=False))

    def _approval(self, approval: Any) -> None:
        """What will run, with its arguments, and who may approve (``threadline chat`` asks
        y/N next); a decided one says who decided."""
        self.end_answer()
        calls = "\n".join(f"{call.tool} {call.arguments_text(600)}" for call in approval.calls)
        footer = f"Only {approval.approvers} may approve" if approval.pending else ""
        title = "Waiting for approval" if approval.pending else approval.outcome()
        body = f"{approval.asker} asks to run:\n{calls}" + (f"\n{footer}" if footer else "")
        style = "yellow" if approval.pending else "dim"
        self.console.print(Panel(body, title=title, border_style=style, expand=False))
        self.approval = approval if approval.pending else None

    def _status(self, title: str, status: str, description: str | None) -> None:
        if status in ("error", "failed"):
            self._panel(title, description or status, "error")
        elif status in ("completed", "success") and description:
            self._line(f"✓ {title}: {description}")
        elif status == "running":
            self._line(f"… {title}")

    def _tool_call(self, call: ToolStatusComponent) -> None:
        """A tool call: its line (running, done, or failed) and a step of the plan the turn
        ends with."""
        self.plan.apply(call)
        self._status(call.tool, call_status_word(call.status), call.detail)

    def _suggest(self, actions: list[str]) -> None:
        if not actions:
            return
        self.end_answer()
        self.suggestions = actions
        lines = "\n".join(f"  [bold]{n}[/bold]. {escape(a)}" for n, a in enumerate(actions, 1))
        self.console.print(f"[dim]Try (type the number):[/dim]\n{lines}", highlight=False)
