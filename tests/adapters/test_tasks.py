"""adapters.tasks.TaskBoard: the plan both channels show, from tool calls' statuses and task
tracker updates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.tasks import MORE_TASKS_ID, TaskBoard
from agent_core.components import (
    Task,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
)

Update = TaskTrackerUpdateComponent


def test_a_group_counts_by_its_steps_and_stop_leaves_open_steps_stopped() -> None:
    board = TaskBoard()
    group = Task(title="2 steps at once", status="in_progress")
    first = Task(title="run_sql", status="in_progress", parent_id=group.id)
    second = Task(title="draw_chart", status="in_progress", parent_id=group.id)
    for task in (group, first, second):
        board.apply(Update.add_task(task))
    board.apply(Update.update_task(first.id, status="completed", detail="12 ms"))
    assert board.title() == "Working: 1 of 2 steps done"
    stopped = board.stop()
    assert [t.title for t in stopped] == ["2 steps at once", "draw_chart"]
    assert {t.status for t in stopped} == {"stopped"}
    assert board.tasks[1].detail == "12 ms" and board.title() == "Stopped after 1 of 2 steps"


def test_a_tool_call_is_one_task_its_later_version_updates_in_place() -> None:
    """Issue 37: a call's status is one component; its versions tick its task off where it
    was added, in a group's order, and a version that changes nothing is not a change."""
    board = TaskBoard()
    group = Task(title="2 steps at once", status="in_progress")
    board.apply(Update.add_task(group))
    first = ToolStatusComponent(tool="run_sql", parent_id=group.id)
    second = ToolStatusComponent(tool="draw_chart", parent_id=group.id)
    assert board.apply(first) and board.apply(second)
    done = second.finished(success=False, detail="failed in 3 ms")
    assert board.apply(done) and not board.apply(done)
    assert [(t.title, t.status, t.detail, t.parent_id) for t in board.tasks[1:]] == [
        ("run_sql", "in_progress", None, group.id),
        ("draw_chart", "error", "failed in 3 ms", group.id),
    ]
    assert board.title() == "Working: 0 of 2 steps done"
    board.apply(first.finished(success=True, detail="completed in 1 ms"))
    board.apply(Update.update_task(group.id, status="error", detail="1 of 2 failed"))
    assert board.title() == "Finished 2 steps, 1 with an error"


def test_updates_of_unknown_tasks_change_nothing() -> None:
    board = TaskBoard()
    assert not board.apply(Update.update_task("nobody", status="completed"))
    assert not board.apply(Update.remove_task("nobody"))
    assert not board.apply(Update.clear_tasks())
    assert len(board) == 0 and board.title() == "Finished 0 steps"


def test_a_failed_step_is_named_in_the_title() -> None:
    board = TaskBoard()
    for status in ("completed", "error"):
        board.apply(Update.add_task(Task(title="step", status=status)))  # type: ignore[arg-type]
    assert board.title() == "Finished 2 steps, 1 with an error"


def test_past_the_limit_one_task_stands_for_the_rest() -> None:
    board = TaskBoard()
    tasks = [Task(title=f"step {i}", status="completed") for i in range(50)]
    tasks[45] = tasks[45].model_copy(update={"status": "pending"})
    for task in tasks:
        board.apply(Update.add_task(task))
    shown = board.shown(40)
    assert len(shown) == 40 and [t.title for t in shown[:39]] == [f"step {i}" for i in range(39)]
    more = shown[-1]
    assert (more.id, more.title, more.status, more.detail) == (
        MORE_TASKS_ID,
        "11 more steps",
        "in_progress",
        "10 of 11 done",
    )


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "remove", "clear"]),
        st.integers(0, 60),
        st.sampled_from(["pending", "in_progress", "completed", "error", "stopped"]),
        st.none() | st.integers(0, 60),
    ),
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(OPERATIONS, st.integers(2, 45))
def test_any_sequence_of_updates_stays_within_the_limit(
    operations: list[tuple[str, int, str, int | None]], limit: int
) -> None:
    """Bad input: updates in any order, for tasks that never existed, parents that do not
    exist or lead back to the task. The board never fails, shows at most ``limit`` tasks,
    each task once when nested, and what it showed alone stays shown alone while tasks are
    only added."""
    board, shown_alone = TaskBoard(), list[str]()
    for operation, number, status, parent in operations:
        task_id = f"t{number}"
        match operation:
            case "add":
                task = Task(
                    id=task_id,
                    title=task_id,
                    status=status,  # type: ignore[arg-type]
                    parent_id=None if parent is None else f"t{parent}",
                )
                board.apply(Update.add_task(task))
            case "update":
                board.apply(Update.update_task(task_id, status=status))  # type: ignore[arg-type]
            case "remove":
                board.apply(Update.remove_task(task_id))
                shown_alone.clear()
            case _:
                board.apply(Update.clear_tasks())
                shown_alone.clear()
        shown = board.shown(limit)
        assert len(shown) <= limit
        alone = [t.id for t in shown if t.id != MORE_TASKS_ID]
        assert alone[: len(shown_alone)] == shown_alone
        shown_alone = alone
        assert board.title()
        assert sorted(t.id for t in board.nested()) == sorted(t.id for t in board.tasks)
        assert len(board.shown(limit, nested=True)) <= limit


def test_nested_puts_each_stated_step_before_its_tool_calls() -> None:
    board = TaskBoard()
    steps = [Task(title="Query revenue", status="in_progress"), Task(title="Draw the trend")]
    board.apply_plan(TaskListComponent(tasks=steps, as_plan=True))
    board.apply(Update.add_task(Task(title="run_sql", parent_id=steps[0].id)))
    board.apply(Update.add_task(Task(title="draw_chart", parent_id=steps[1].id)))
    assert [t.title for t in board.tasks] == [
        "Query revenue",
        "Draw the trend",
        "run_sql",
        "draw_chart",
    ]
    assert [t.title for t in board.nested()] == [
        "Query revenue",
        "run_sql",
        "Draw the trend",
        "draw_chart",
    ]
    assert board.title() == "Working: 0 of 2 steps done"  # the stated steps are what counts


def test_an_answered_turn_whose_model_left_steps_open_says_so() -> None:
    board = TaskBoard()
    steps = [Task(title="Query", status="completed"), Task(title="Chart", status="in_progress")]
    board.apply_plan(TaskListComponent(tasks=steps, as_plan=True))
    board.end()
    assert board.title() == "Answered after 1 of 2 steps"
    assert [t.status for t in board.tasks] == ["completed", "in_progress"]  # as the model left them
