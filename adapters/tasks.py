"""``TaskBoard``: the turn's plan as both channels show it, built from task tracker updates.

The agent streams each tool call as one ``ToolStatusComponent``, updated in place when the
call ends, a group of parallel calls as ``TaskTrackerUpdateComponent`` changes (it begins, it
ends), and the model's stated plan as a ``TaskListComponent`` with ``as_plan``
(``apply_plan``); the board keeps the latest state of each task in the order they
appeared, so Slack's plan (``adapters.slack.plan``) and Teams' task list
(``adapters.teams.plan``) read the same plan. ``stop`` marks what had not finished as
``stopped``; ``shown(limit)`` keeps a long plan within a platform's limits: the first
``limit - 1`` tasks, then one task that stands for the rest ("12 more steps", its status
the least finished of theirs), so what a stream already showed is never taken back.

>>> from agent_core.components import ToolStatusComponent as Call
>>> board = TaskBoard()
>>> first, second = Call(tool="run_sql"), Call(tool="draw_chart", status="pending")
>>> board.apply(first) and board.apply(second)
True
>>> board.apply(first.finished(success=True, detail="completed")) and board.title()
'Working: 1 of 2 steps done'
>>> [t.status for t in board.stop()], board.title()
(['stopped'], 'Stopped after 1 of 2 steps')
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent_core.components import (
    TaskListComponent,
    TaskOperation,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
)
from agent_core.components.interactive import OPEN_TASK_STATUSES, TaskStatus

MORE_TASKS_ID = "threadline-more-steps"
"""The id of the task that stands for the steps past a platform's limit."""

TASK_MARKS: dict[str, str] = {
    "pending": "⬜",
    "in_progress": "⏳",
    "completed": "✅",
    "error": "❌",
    "stopped": "⏹️",
}
"""How a task's status reads as text (Teams' task list, ``threadline chat``)."""

_CALL_STATUS_WORDS: dict[str, str] = {"in_progress": "running", "error": "failed"}


def call_status_word(status: TaskStatus) -> str:
    """How a tool call's status reads on its card: ``running``, ``completed``, ``failed``.

    >>> call_status_word("error")
    'failed'
    """
    return _CALL_STATUS_WORDS.get(status, status)


_LEAST_FINISHED: tuple[TaskStatus, ...] = (
    "in_progress",
    "pending",
    "error",
    "stopped",
    "completed",
)


@dataclass(frozen=True, slots=True)
class PlanTask:
    """One task as the board knows it now.

    >>> PlanTask("t1", "run_sql", "completed").finished
    True
    """

    id: str
    title: str
    status: TaskStatus
    detail: str | None = None
    parent_id: str | None = None
    planned: bool = False
    """A step of the plan the model stated (``PlanTool``), not a tool call."""

    @property
    def finished(self) -> bool:
        return self.status not in OPEN_TASK_STATUSES


class TaskBoard:
    """The latest state of each task of one turn, in the order they appeared."""

    def __init__(self) -> None:
        self._tasks: dict[str, PlanTask] = {}
        self.stopped = False
        self.ended = False
        """The turn answered (``end``): a step still open was never ticked off."""

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def tasks(self) -> list[PlanTask]:
        """In the order they appeared (what a stream, which cannot reorder, shows)."""
        return list(self._tasks.values())

    def nested(self) -> list[PlanTask]:
        """Each task followed by its subtasks (the calls of a group, of a stated step); a
        task whose parent is unknown, or that is its own ancestor, stays where it appeared."""
        children: dict[str, list[PlanTask]] = {}
        for task in self.tasks:
            if task.parent_id in self._tasks and task.parent_id != task.id:
                children.setdefault(task.parent_id, []).append(task)
        ordered: list[PlanTask] = []
        seen: set[str] = set()
        for root in self.tasks:
            if root.id in seen or (
                root.parent_id in self._tasks
                and root.parent_id != root.id
                and not self._in_cycle(root)
            ):
                continue
            stack = [root]
            while stack:
                task = stack.pop()
                if task.id in seen:
                    continue
                seen.add(task.id)
                ordered.append(task)
                stack.extend(reversed(children.get(task.id, [])))
        return ordered

    def _in_cycle(self, task: PlanTask) -> bool:
        """``task``'s parents lead back to it (bad input: never shown as a tree)."""
        walked, parent = {task.id}, task.parent_id
        while parent in self._tasks and parent is not None:
            if parent in walked:
                return True
            walked.add(parent)
            parent = self._tasks[parent].parent_id
        return False

    def apply(self, update: TaskTrackerUpdateComponent | ToolStatusComponent) -> bool:
        """Take one update; False when it changes nothing the board shows (an update of a
        task never added, a removal of an unknown one). A tool call's status adds its task,
        and its later versions update it in place."""
        if isinstance(update, ToolStatusComponent):
            return self._apply_call(update)
        match update.operation:
            case TaskOperation.ADD_TASK if update.task is not None:
                task = update.task
                self._tasks[task.id] = PlanTask(
                    task.id,
                    task.title,
                    update.status or task.status,
                    update.detail or task.description,
                    task.parent_id,
                )
                return True
            case TaskOperation.UPDATE_TASK if update.task_id in self._tasks:
                known = self._tasks[update.task_id]
                status = update.status or known.status
                self._tasks[known.id] = replace(
                    known, status=status, detail=update.detail or known.detail
                )
                return True
            case TaskOperation.REMOVE_TASK if update.task_id in self._tasks:
                del self._tasks[update.task_id]
                return True
            case TaskOperation.CLEAR_TASKS if self._tasks:
                self._tasks.clear()
                return True
        return False

    def _apply_call(self, call: ToolStatusComponent) -> bool:
        known = self._tasks.get(call.id)
        if known is None:
            task = PlanTask(call.id, call.tool, call.status, call.detail, call.parent_id)
        else:
            task = replace(known, status=call.status, detail=call.detail or known.detail)
        self._tasks[call.id] = task
        return task != known

    def apply_plan(self, plan: TaskListComponent) -> bool:
        """Take a version of the model's stated plan: its steps are added, or updated in
        place; False when it changes nothing."""
        known = dict(self._tasks)
        for task in plan.tasks:
            old = self._tasks.get(task.id)
            detail = old.detail if old is not None else task.description
            self._tasks[task.id] = PlanTask(
                task.id, task.title, task.status, detail, task.parent_id, planned=True
            )
        return self._tasks != known

    def end(self, *, stopped: bool = False) -> None:
        """The turn is over: answered, or ``stopped`` by the user (``stop``)."""
        if stopped:
            self.stop()
        self.ended = True

    def stop(self) -> list[PlanTask]:
        """The user stopped the turn: every unfinished task becomes ``stopped``; returns
        those tasks."""
        self.stopped = True
        changed = [
            replace(t, status="stopped", detail="Stopped") for t in self.tasks if not t.finished
        ]
        self._tasks.update((t.id, t) for t in changed)
        return changed

    @property
    def done(self) -> int:
        """Steps that completed (a group of parallel steps is counted by its steps)."""
        return sum(t.status == "completed" for t in self._steps())

    def _steps(self) -> list[PlanTask]:
        """What the title counts: the model's stated steps when it stated a plan, else every
        tool call (a group of parallel calls counts as its calls)."""
        planned = [t for t in self.tasks if t.planned]
        if planned:
            return planned
        parents = {t.parent_id for t in self.tasks if t.parent_id}
        return [t for t in self.tasks if t.id not in parents]

    def title(self) -> str:
        """The plan's one-line title: how far it got, and how it ended."""
        steps = len(self._steps())
        noun = "step" if steps == 1 else "steps"
        failed = sum(t.status == "error" for t in self._steps())
        if self.stopped:
            return f"Stopped after {self.done} of {steps} {noun}"
        if any(not t.finished for t in self.tasks):
            if self.ended:  # the model never ticked its last steps off
                return f"Answered after {self.done} of {steps} {noun}"
            return f"Working: {self.done} of {steps} {noun} done"
        if failed:
            return f"Finished {steps} {noun}, {failed} with an error"
        return f"Finished {steps} {noun}"

    def shown(self, limit: int, *, nested: bool = False) -> list[PlanTask]:
        """At most ``limit`` tasks: the first ``limit - 1``, then one that stands for the
        rest. In the order they appeared, the tasks shown on their own only ever grow (a
        stream cannot take one back); ``nested`` orders them as ``nested()`` does."""
        tasks = self.nested() if nested else self.tasks
        if len(tasks) < limit:
            return tasks
        kept, rest = tasks[: limit - 1], tasks[limit - 1 :]
        status = next(s for s in _LEAST_FINISHED if any(t.status == s for t in rest))
        if status == "pending" and any(t.finished for t in rest):
            status = "in_progress"  # some of the rest done, some not started
        done = sum(t.status == "completed" for t in rest)
        noun = "step" if len(rest) == 1 else "steps"
        more = PlanTask(
            MORE_TASKS_ID, f"{len(rest)} more {noun}", status, f"{done} of {len(rest)} done"
        )
        return [*kept, more]
