"""`threadline chat` prints a turn's plan (issue 13, item 1): the demo agent's chart
questions run a query and a chart at once, a Stop marks what never finished."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from agent_core.agent import Agent
from agent_core.components import Task, TaskTrackerUpdateComponent, UiComponent
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
