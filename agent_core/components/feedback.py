"""Feedback components: notifications, status, progress, logs, badges."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.components.base import ComponentType, RichComponent
from agent_core.components.text import StatusLevel

CardStatus = Literal[
    "pending", "running", "completed", "failed", "success", "warning", "error", "info"
]


class NotificationComponent(RichComponent):
    """A short message with a level. ``NotificationComponent(message="Limit reached",
    level="warning")``"""

    type: ComponentType = ComponentType.NOTIFICATION
    message: str
    title: str | None = None
    level: StatusLevel = "info"
    icon: str | None = None
    dismissible: bool = True
    auto_dismiss: bool = False
    auto_dismiss_delay: int = 5000
    actions: list[dict[str, Any]] = Field(default_factory=list)


class StatusCardComponent(RichComponent):
    """The status of one operation (a tool call, a failed turn).

    >>> card = StatusCardComponent(title="run_sql", status="running")
    >>> card.set_status("completed", "12 rows").status
    'completed'
    """

    type: ComponentType = ComponentType.STATUS_CARD
    title: str
    status: CardStatus
    description: str | None = None
    icon: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    actions: list[dict[str, Any]] = Field(default_factory=list)
    collapsible: bool = False
    collapsed: bool = False

    def set_status(self, status: CardStatus, description: str | None = None) -> StatusCardComponent:
        changes: dict[str, Any] = {"status": status}
        if description is not None:
            changes["description"] = description
        return self.update(**changes)


class ProgressBarComponent(RichComponent):
    """A bare progress bar, ``value`` in 0..1."""

    type: ComponentType = ComponentType.PROGRESS_BAR
    value: float = Field(ge=0.0, le=1.0)
    label: str | None = None
    show_percentage: bool = True
    status: StatusLevel | None = None
    animated: bool = False


class ProgressDisplayComponent(RichComponent):
    """Labelled progress with a description; ``indeterminate`` when the end is unknown."""

    type: ComponentType = ComponentType.PROGRESS_DISPLAY
    label: str
    value: float = Field(default=0.0, ge=0.0, le=1.0)
    description: str | None = None
    status: StatusLevel | None = None
    show_percentage: bool = True
    animated: bool = False
    indeterminate: bool = False

    def update_progress(
        self, value: float, description: str | None = None
    ) -> ProgressDisplayComponent:
        changes: dict[str, Any] = {"value": max(0.0, min(1.0, value))}
        if description is not None:
            changes["description"] = description
        return self.update(**changes)


class StatusIndicatorComponent(RichComponent):
    """A one-line status with an icon: ``loading``, ``success``, ``error``..."""

    type: ComponentType = ComponentType.STATUS_INDICATOR
    status: Literal["success", "warning", "error", "info", "loading"]
    message: str
    icon: str | None = None
    pulse: bool = False


class LogEntry(BaseModel):
    model_config = ConfigDict(defer_build=True)

    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)
    level: Literal["debug", "info", "warning", "error"] = "info"
    message: str
    data: dict[str, Any] | None = None


class LogViewerComponent(RichComponent):
    """A list of log lines. ``LogViewerComponent().add_entry("started")``"""

    type: ComponentType = ComponentType.LOG_VIEWER
    title: str = "Logs"
    entries: list[LogEntry] = Field(default_factory=list)
    max_entries: int = 100
    searchable: bool = True
    show_timestamps: bool = True
    auto_scroll: bool = True

    def add_entry(
        self,
        message: str,
        level: Literal["debug", "info", "warning", "error"] = "info",
        data: dict[str, Any] | None = None,
    ) -> LogViewerComponent:
        entries = [*self.entries, LogEntry(message=message, level=level, data=data)]
        return self.update(entries=entries[-self.max_entries :])


class BadgeComponent(RichComponent):
    """A small label. ``BadgeComponent(text="beta", variant="info")``"""

    type: ComponentType = ComponentType.BADGE
    text: str
    variant: Literal["default", "primary", "secondary", "success", "warning", "error", "info"] = (
        "default"
    )
    size: Literal["small", "medium", "large"] = "medium"
    icon: str | None = None


class IconTextComponent(RichComponent):
    """An icon (emoji) beside text."""

    type: ComponentType = ComponentType.ICON_TEXT
    icon: str
    text: str
    variant: Literal["default", "primary", "secondary", "muted"] = "default"
    size: Literal["small", "medium", "large"] = "medium"
    alignment: Literal["left", "center", "right"] = "left"
