"""`threadline chat` prints a turn's plan (issue 13, item 1): the demo agent's chart
questions run a query and a chart at once, a Stop marks what never finished."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from agent_core.agent import Agent
from agent_core.components import (
    Task,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)
from bots.dev.chat import ChatSession
from bots.dev.chat_view import ChatView

QUESTION = "Who are our top customers by revenue?"


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=120, color_system=None, force_terminal=False), out


async def test_a_turn_of_parallel_steps_ends_with_its_plan(agent: Agent, tmp_path: Path) -> None:
    screen, out = console()
    chat = ChatSession(agent, screen, tmp_path / "charts")
    assert await chat.ask(QUESTION) is True
    text = out.getvalue()
    plan = text[text.index("Finished 2 steps") :].splitlines()
    assert plan[1] == "  ✅ 2 steps at once · 2 done"
    assert [line.split(" · ")[0] for line in plan[2:4]] == [
        "     ↳ ✅ run_sql",
        "     ↳ ✅ visualize_data",
    ]
    out.truncate(0)
    out.seek(0)
    assert await chat.ask("hello") is True  # no steps: no plan, and the last one is gone
    assert "steps" not in out.getvalue()


def test_a_stopped_turn_marks_the_steps_that_never_finished(tmp_path: Path) -> None:
    screen, out = console()
    view = ChatView(screen, tmp_path)
    done, running = Task(title="run_sql", status="in_progress"), Task(title="draw_chart")
    for update in (
        TaskTrackerUpdateComponent.add_task(done),
        TaskTrackerUpdateComponent.update_task(done.id, status="completed"),
        TaskTrackerUpdateComponent.add_task(running),
    ):
        view.show(UiComponent(rich_component=update))
    view.end_turn(stopped=True)
    assert out.getvalue().splitlines() == [
        "Stopped after 1 of 2 steps",
        "  ✅ run_sql",
        "  ⏹️ draw_chart · Stopped",
    ]


def test_a_tool_calls_one_status_is_its_lines_and_a_step_of_the_plan(tmp_path: Path) -> None:
    """Issue 37: a tool call is one component updated in place; the console shows what its
    status card and task showed: a line while it runs, its outcome, the plan's step."""
    screen, out = console()
    view = ChatView(screen, tmp_path)
    ok, bad = ToolStatusComponent(tool="run_sql"), ToolStatusComponent(tool="draw_chart")
    for call, version in (
        (ok, ok.finished(success=True, detail="completed in 3 ms")),
        (bad, bad.finished(success=False, detail="failed in 2 ms")),
    ):
        view.show(UiComponent(rich_component=call))
        view.show(UiComponent(rich_component=version))
    view.end_turn()
    text = out.getvalue()
    assert "… run_sql" in text and "✓ run_sql: completed in 3 ms" in text
    assert "… draw_chart" in text and "failed in 2 ms" in text
    plan = text[text.index("Finished 2 steps, 1 with an error") :].splitlines()
    assert plan[1:] == ["  ✅ run_sql · completed in 3 ms", "  ❌ draw_chart · failed in 2 ms"]
