"""UI components: what the agent streams and channels render (rich form + simple form)."""

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
from agent_core.components.interactive import (
    ButtonComponent,
    ButtonGroupComponent,
    ButtonSpec,
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
from agent_core.components.text import ArtifactComponent, CardComponent, RichTextComponent
from agent_core.components.ui_state import (
    ChatInputUpdateComponent,
    StatusBarUpdateComponent,
    TaskOperation,
    TaskTrackerUpdateComponent,
)

__all__ = [
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
    "LogEntry",
    "LogViewerComponent",
    "NotificationComponent",
    "ProgressBarComponent",
    "ProgressDisplayComponent",
    "RichComponent",
    "RichTextComponent",
    "SimpleComponent",
    "SimpleComponentType",
    "SimpleImageComponent",
    "SimpleLinkComponent",
    "SimpleTextComponent",
    "StatusBarUpdateComponent",
    "StatusCardComponent",
    "StatusIndicatorComponent",
    "Task",
    "TaskListComponent",
    "TaskOperation",
    "TaskTrackerUpdateComponent",
    "UiComponent",
    "new_component_id",
]
