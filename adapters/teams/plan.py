"""The turn's plan in Teams: progress lines while it runs, a task list in the final answer.

While the steps run, each one that starts is an informative update of the stream (personal
chats) that says where the plan is: ``progress_line`` ("Step 2 of 3: draw_chart…"). Once the
turn ran more than one step, the answer carries ``task_list_card``: an Adaptive Card with
the plan's title and each step with its mark (done, failed, stopped), a group of parallel
steps with its steps indented under it. A long plan keeps ``MAX_PLAN_TASKS`` lines, the last
standing for the rest (``adapters.tasks.TaskBoard.shown``), well inside Teams' 28 KB card.

>>> from agent_core.components import ToolStatusComponent
>>> board = TaskBoard()
>>> step = ToolStatusComponent(tool="run_sql")
>>> board.apply(step)
True
>>> progress_line(board, step.id)
'Step 1: run_sql…'
"""

from __future__ import annotations

from adapters.tasks import TASK_MARKS, PlanTask, TaskBoard
from adapters.teams import elements

MAX_PLAN_TASKS = 40
MAX_TASK_TITLE = 150
MAX_TASK_DETAIL = 300


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def progress_line(board: TaskBoard, task_id: str) -> str | None:
    """The informative update for the step ``task_id`` that just started, or None."""
    steps = [t for t in board.tasks if t.parent_id is None]
    task = next((t for t in board.tasks if t.id == task_id), None)
    if task is None:
        return None
    title = _clip(task.title, MAX_TASK_TITLE)
    if task.parent_id is not None:
        return f"{title}…"
    return f"Step {steps.index(task) + 1}: {title}…"


def plan_progress_line(board: TaskBoard) -> str | None:
    """The informative update for the model's stated plan: the step it works on, or None."""
    planned = [t for t in board.tasks if t.planned]
    working = next((t for t in planned if t.status == "in_progress"), None)
    if working is None:
        return None
    number = planned.index(working) + 1
    return f"Step {number} of {len(planned)}: {_clip(working.title, MAX_TASK_TITLE)}…"


def _run(text: str, *, subtle: bool = False) -> elements.Element:
    run: elements.Element = {"type": "TextRun", "text": text}
    if subtle:
        run["isSubtle"] = True
    return run


def _line(task: PlanTask) -> elements.Element:
    """One step as a RichTextBlock: its text runs are never read as markdown, so a title
    like ``run_sql`` shows as written."""
    indent = task.parent_id is not None
    head = f"{'↳ ' if indent else ''}{TASK_MARKS[task.status]} "
    inlines = [_run(head + _clip(task.title, MAX_TASK_TITLE), subtle=indent)]
    if task.detail:
        inlines.append(_run(f" · {_clip(task.detail, MAX_TASK_DETAIL)}", subtle=True))
    return {"type": "RichTextBlock", "inlines": inlines, "spacing": "None" if indent else "Small"}


def task_list_card(board: TaskBoard) -> elements.Element:
    """The plan as an Adaptive Card: its title, then one line per step."""
    title = board.title()
    body = [elements.plain_block(title, weight="Bolder")]
    body += [_line(task) for task in board.shown(MAX_PLAN_TASKS, nested=True)]
    return elements.card(body, fallback_text=title)
