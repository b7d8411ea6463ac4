"""UI-state components: they steer the client (status bar, task tracker, chat input)
rather than add content. Chat renderers map what has a chat meaning (status -> Slack's
assistant status, tasks -> plan updates) and drop the rest."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from agent_core.components.base import ComponentType, RichComponent
from agent_core.components.interactive import Task, TaskStatus

BarStatus = Literal["idle", "working", "success", "warning", "error"]

RefusalKind = Literal["permission"]
"""Why a tool call was refused for its asker: ``permission``, the person may not use the
tool (its access groups) or reach its data (their data roles)."""


class StatusBarUpdateComponent(RichComponent):
    """``StatusBarUpdateComponent(status="working", message="Thinking...")``"""

    type: ComponentType = ComponentType.STATUS_BAR_UPDATE
    status: BarStatus
    message: str
    detail: str | None = None


class TaskOperation(StrEnum):
    ADD_TASK = "add_task"
    UPDATE_TASK = "update_task"
    REMOVE_TASK = "remove_task"
    CLEAR_TASKS = "clear_tasks"


class TaskTrackerUpdateComponent(RichComponent):
    """One change to the client's task tracker; build with the class methods.

    >>> TaskTrackerUpdateComponent.add_task(Task(title="Query")).operation.value
    'add_task'
    """

    type: ComponentType = ComponentType.TASK_TRACKER_UPDATE
    operation: TaskOperation
    task: Task | None = None
    task_id: str | None = None
    status: TaskStatus | None = None
    progress: float | None = None
    detail: str | None = None

    @classmethod
    def add_task(cls, task: Task) -> TaskTrackerUpdateComponent:
        return cls(operation=TaskOperation.ADD_TASK, task=task, task_id=task.id)

    @classmethod
    def update_task(
        cls,
        task_id: str,
        status: TaskStatus | None = None,
        progress: float | None = None,
        detail: str | None = None,
    ) -> TaskTrackerUpdateComponent:
        return cls(
            operation=TaskOperation.UPDATE_TASK,
            task_id=task_id,
            status=status,
            progress=progress,
            detail=detail,
        )

    @classmethod
    def remove_task(cls, task_id: str) -> TaskTrackerUpdateComponent:
        return cls(operation=TaskOperation.REMOVE_TASK, task_id=task_id)

    @classmethod
    def clear_tasks(cls) -> TaskTrackerUpdateComponent:
        return cls(operation=TaskOperation.CLEAR_TASKS)


class ChatInputUpdateComponent(RichComponent):
    """Enable/disable or prefill the client's chat input; chat channels drop it."""

    type: ComponentType = ComponentType.CHAT_INPUT_UPDATE
    placeholder: str | None = None
    disabled: bool | None = None
    value: str | None = None
    focus: bool | None = None


class ToolRefusedComponent(RichComponent):
    """A tool call of the turn was refused for the person asking (``kind`` says why).

    A signal, not content: it is never visible, so chat renderers show nothing (the model's
    answer says what it could not do, and whoever may not use a tool is not shown its name).
    A channel that cannot show an answer around it, a workflow step, ends on it instead.

    >>> refused = ToolRefusedComponent(tool="run_sql", kind="permission")
    >>> refused.visible, refused.type.value
    (False, 'tool_refused')
    """

    type: ComponentType = ComponentType.TOOL_REFUSED
    tool: str
    kind: RefusalKind
    visible: bool = False
