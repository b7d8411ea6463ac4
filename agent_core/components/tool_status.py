"""``ToolStatusComponent``: one tool call as every channel shows it, one component a call.

A call is a step of the turn's plan and, while it runs, the turn's status: the component is
yielded when the call starts (``in_progress``) and once more when it ends, as a new version
of itself (same id, ``update``: ``completed`` or ``error`` with how long it took). Its id is
the step's id in the plan, ``parent_id`` the group of parallel calls or the stated step it
runs under. Channels read it as a task of their plan (``adapters.tasks.TaskBoard``), a status
line while it runs, and a message when it failed. It is yielded without a simple form: a
channel that does not show it natively has its plain line built then (``summary``), not on
every call of every turn.
"""

from __future__ import annotations

from agent_core.components.base import ComponentType, RichComponent
from agent_core.components.interactive import TaskStatus


class ToolStatusComponent(RichComponent):
    """The status of one tool call, updated in place as it runs and ends.

    >>> running = ToolStatusComponent(tool="run_sql")
    >>> done = running.finished(success=True, detail="completed in 12 ms")
    >>> (done.id == running.id, done.lifecycle.value, done.status, done.detail)
    (True, 'update', 'completed', 'completed in 12 ms')
    """

    type: ComponentType = ComponentType.TOOL_STATUS
    tool: str
    status: TaskStatus = "in_progress"
    detail: str | None = None
    parent_id: str | None = None
    """The task this call runs under: its group of parallel calls, or the step of the plan
    the model stated that was in progress."""

    @property
    def failed(self) -> bool:
        return self.status == "error"

    def summary(self) -> str:
        """The call as a plain line: "Running run_sql...", "run_sql completed", "... failed".

        >>> ToolStatusComponent(tool="run_sql", status="error").summary()
        'run_sql failed'
        """
        if self.status == "in_progress":
            return f"Running {self.tool}..."
        return f"{self.tool} {'failed' if self.failed else self.status}"

    def finished(self, *, success: bool, detail: str) -> ToolStatusComponent:
        """The version saying how the call ended (``detail``: "completed in 12 ms")."""
        return self.update(status="completed" if success else "error", detail=detail)
