"""UI components: what the agent streams and channels render (rich form + simple form).

Each family (text, feedback, data, interactive, UI state) loads on first use: a turn that
never draws a chart never imports the chart components.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "agent_core.components.approval": (
        "ApprovalCallView",
        "ApprovalComponent",
        "ApprovalState",
    ),
    "agent_core.components.base": (
        "Audience",
        "ComponentLifecycle",
        "ComponentStream",
        "ComponentType",
        "RichComponent",
        "UiComponent",
        "new_component_id",
    ),
    "agent_core.components.data": (
        "ChartComponent",
        "ChartSeries",
        "ChartType",
        "DataFrameComponent",
    ),
    "agent_core.components.feedback": (
        "BadgeComponent",
        "IconTextComponent",
        "LogEntry",
        "LogViewerComponent",
        "NotificationComponent",
        "ProgressBarComponent",
        "ProgressDisplayComponent",
        "StatusCardComponent",
        "StatusIndicatorComponent",
    ),
    "agent_core.components.images": ("ImageComponent",),
    "agent_core.components.interactive": (
        "ButtonComponent",
        "ButtonGroupComponent",
        "ButtonSpec",
        "SignInComponent",
        "Task",
        "TaskListComponent",
    ),
    "agent_core.components.simple": (
        "SimpleComponent",
        "SimpleComponentType",
        "SimpleImageComponent",
        "SimpleLinkComponent",
        "SimpleTextComponent",
    ),
    "agent_core.components.sources": ("Source", "SourcesComponent"),
    "agent_core.components.text": (
        "ArtifactComponent",
        "CardComponent",
        "RichTextComponent",
    ),
    "agent_core.components.tool_status": ("ToolStatusComponent",),
    "agent_core.components.ui_state": (
        "ChatInputUpdateComponent",
        "StatusBarUpdateComponent",
        "RefusalKind",
        "TaskOperation",
        "TaskTrackerUpdateComponent",
        "ToolRefusedComponent",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ApprovalCallView",
    "ApprovalComponent",
    "ApprovalState",
    "ArtifactComponent",
    "Audience",
    "BadgeComponent",
    "ButtonComponent",
    "ButtonGroupComponent",
    "ButtonSpec",
    "CardComponent",
    "ChartComponent",
    "ChartSeries",
    "ChartType",
    "ChatInputUpdateComponent",
    "ComponentLifecycle",
    "ComponentStream",
    "ComponentType",
    "DataFrameComponent",
    "IconTextComponent",
    "ImageComponent",
    "LogEntry",
    "LogViewerComponent",
    "NotificationComponent",
    "ProgressBarComponent",
    "ProgressDisplayComponent",
    "RefusalKind",
    "RichComponent",
    "RichTextComponent",
    "SignInComponent",
    "SimpleComponent",
    "SimpleComponentType",
    "SimpleImageComponent",
    "SimpleLinkComponent",
    "SimpleTextComponent",
    "Source",
    "SourcesComponent",
    "StatusBarUpdateComponent",
    "StatusCardComponent",
    "StatusIndicatorComponent",
    "Task",
    "TaskListComponent",
    "TaskOperation",
    "TaskTrackerUpdateComponent",
    "ToolRefusedComponent",
    "ToolStatusComponent",
    "UiComponent",
    "new_component_id",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.components' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once: the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see: every name, imported as usual
    from agent_core.components.approval import (
        ApprovalCallView,
        ApprovalComponent,
        ApprovalState,
    )
    from agent_core.components.base import (
        Audience,
        ComponentLifecycle,
        ComponentStream,
        ComponentType,
        RichComponent,
        UiComponent,
        new_component_id,
    )
    from agent_core.components.data import (
        ChartComponent,
        ChartSeries,
        ChartType,
        DataFrameComponent,
    )
    from agent_core.components.feedback import (
        BadgeComponent,
        IconTextComponent,
        LogEntry,
        LogViewerComponent,
        NotificationComponent,
        ProgressBarComponent,
        ProgressDisplayComponent,
        StatusCardComponent,
        StatusIndicatorComponent,
    )
    from agent_core.components.images import ImageComponent
    from agent_core.components.interactive import (
        ButtonComponent,
        ButtonGroupComponent,
        ButtonSpec,
        SignInComponent,
        Task,
        TaskListComponent,
    )
    from agent_core.components.simple import (
        SimpleComponent,
        SimpleComponentType,
        SimpleImageComponent,
        SimpleLinkComponent,
        SimpleTextComponent,
    )
    from agent_core.components.sources import Source, SourcesComponent
    from agent_core.components.text import (
        ArtifactComponent,
        CardComponent,
        RichTextComponent,
    )
    from agent_core.components.tool_status import ToolStatusComponent
    from agent_core.components.ui_state import (
        ChatInputUpdateComponent,
        RefusalKind,
        StatusBarUpdateComponent,
        TaskOperation,
        TaskTrackerUpdateComponent,
        ToolRefusedComponent,
    )
