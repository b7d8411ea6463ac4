"""Interactive components: buttons, sign-in prompts and task lists.

A button's ``action`` is the message sent on the user's behalf when it is clicked (a
suggested question, ``/help``...), so every channel can replay it through ``send_message``.
A sign-in prompt (``SignInComponent``) is different: its button opens a page in the
person's browser, and it is only ever shown to that person.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.components.base import ComponentType, RichComponent, new_component_id

ButtonVariant = Literal["primary", "secondary", "success", "warning", "error", "ghost", "link"]


class ButtonComponent(RichComponent):
    """One button. ``ButtonComponent(label="Help", action="/help")``"""

    type: ComponentType = ComponentType.BUTTON
    interactive: bool = True
    label: str
    action: str
    variant: ButtonVariant = "primary"
    size: Literal["small", "medium", "large"] = "medium"
    icon: str | None = None
    icon_position: Literal["left", "right"] = "left"
    disabled: bool = False


class ButtonSpec(BaseModel):
    """A button inside a ``ButtonGroupComponent``."""

    model_config = ConfigDict(defer_build=True)

    label: str
    action: str
    variant: ButtonVariant = "secondary"
    icon: str | None = None
    disabled: bool = False


class ButtonGroupComponent(RichComponent):
    """A row (or column) of buttons.

    >>> g = ButtonGroupComponent(buttons=[ButtonSpec(label="Help", action="/help")])
    >>> g.buttons[0].action
    '/help'
    """

    type: ComponentType = ComponentType.BUTTON_GROUP
    interactive: bool = True
    buttons: list[ButtonSpec] = Field(default_factory=list)
    orientation: Literal["horizontal", "vertical"] = "horizontal"
    spacing: Literal["small", "medium", "large"] = "medium"
    alignment: Literal["start", "center", "end", "stretch"] = "start"
    full_width: bool = False


class SignInComponent(RichComponent):
    """ "Connect <service>": a button opening ``url`` (an authorization page) in the browser.

    The URL starts one person's sign-in, so the component goes to them alone
    (``audience="requester"``: Slack ephemeral, Teams a card in the 1:1 chat; with Teams
    single sign-on, an OAuthCard targeted to them in the same conversation).

    >>> prompt = SignInComponent(service="tickets", url="https://auth.example/authorize?x=1")
    >>> prompt.label
    'Connect tickets'
    """

    type: ComponentType = ComponentType.SIGN_IN
    service: str
    url: str
    message: str = ""
    """Why the person is asked (shown above the button)."""
    exchange: str | None = None
    """The sign-in a channel's single sign-on finishes in place (Teams' token exchange);
    None: only ``url`` signs the person in."""

    @property
    def label(self) -> str:
        return f"Connect {self.service}"


TaskStatus = Literal["pending", "in_progress", "completed", "error", "stopped"]
"""``stopped``: the user pressed Stop before the task finished."""

OPEN_TASK_STATUSES: frozenset[str] = frozenset({"pending", "in_progress"})
"""Statuses of a task that has not finished (what a Stop turns into ``stopped``)."""


class Task(BaseModel):
    """One entry of a task list or the task tracker; ``parent_id`` names the group of
    parallel steps it runs in.

    >>> Task(title="run_sql", parent_id="g1").status
    'pending'
    """

    model_config = ConfigDict(defer_build=True)

    id: str = Field(default_factory=new_component_id)
    title: str
    description: str | None = None
    status: TaskStatus = "pending"
    progress: float | None = None
    created_at: float = Field(default_factory=SYSTEM_CLOCK.now)
    completed_at: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    parent_id: str | None = None


class TaskListComponent(RichComponent):
    """A checklist; ``update_task`` returns a newer version of the list.

    ``as_plan``: the list is the turn's plan (``agent_core.tools.plan.PlanTool``): channels
    merge its tasks into the plan they show instead of showing a list of its own.
    """

    type: ComponentType = ComponentType.TASK_LIST
    title: str = "Tasks"
    tasks: list[Task] = Field(default_factory=list)
    show_progress: bool = True
    allow_reorder: bool = False
    show_timestamps: bool = True
    filter_status: TaskStatus | None = None
    as_plan: bool = False

    def add_task(self, task: Task) -> TaskListComponent:
        return self.update(tasks=[*self.tasks, task])

    def update_task(self, task_id: str, **changes: Any) -> TaskListComponent:
        tasks = [t.model_copy(update=changes) if t.id == task_id else t for t in self.tasks]
        return self.update(tasks=tasks)

    def complete_task(self, task_id: str) -> TaskListComponent:
        return self.update_task(task_id, status="completed", completed_at=SYSTEM_CLOCK.now())
