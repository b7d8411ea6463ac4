"""``ComponentRenderer``: the one shape of a channel's renderer.

Each channel renders the agent's components into its own payloads (Slack: Block Kit
messages; Teams: Adaptive Cards and message text). The dispatch is the same in both, so it
lives here: ``render(component)`` picks the hook for the rich component's type, and a hook
that is not overridden (or returns ``None``) falls back to the component's simple form.
Each channel overrides only the hooks it renders natively, as pydantic-ai's UI event
streams do::

    class TeamsRenderer(ComponentRenderer[Rendering | None]):
        def on_notification(self, note): return Rendering(card=...)
        ...

>>> from agent_core.components import (NotificationComponent, SimpleTextComponent,
...                                    UiComponent)
>>> class Plain(ComponentRenderer[str]):
...     def nothing(self): return ""
...     def simple(self, simple): return simple.text if simple else ""
...     def on_notification(self, note): return f"! {note.message}"
>>> Plain().render(UiComponent(rich_component=NotificationComponent(message="Saved")))
'! Saved'
>>> from agent_core.components import BadgeComponent
>>> Plain().render(UiComponent(rich_component=BadgeComponent(text="beta"),
...                            simple_component=SimpleTextComponent(text="beta")))
'beta'

A tool call's status comes without a simple form; a channel that does not render it
natively gets its plain line, built then:

>>> from agent_core.components import ToolStatusComponent
>>> Plain().render(UiComponent(rich_component=ToolStatusComponent(tool="run_sql")))
'Running run_sql...'
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic, TypeVar

from agent_core.components import (
    ApprovalComponent,
    ArtifactComponent,
    BadgeComponent,
    ButtonComponent,
    ButtonGroupComponent,
    CardComponent,
    ChartComponent,
    ChatInputUpdateComponent,
    DataFrameComponent,
    IconTextComponent,
    LogViewerComponent,
    NotificationComponent,
    ProgressBarComponent,
    ProgressDisplayComponent,
    RichComponent,
    RichTextComponent,
    SignInComponent,
    SimpleComponent,
    SimpleTextComponent,
    SourcesComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    StatusIndicatorComponent,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)

Out = TypeVar("Out")


class ComponentRenderer(ABC, Generic[Out]):
    """Dispatches each rich component to its ``on_<type>`` hook; see the module docstring.

    Hooks return the channel's output, or ``None`` for "render the simple form instead".
    ``on_chat_input_update`` returns ``nothing()``: UI state with no meaning in a chat is
    dropped by the renderer, never by the agent.
    """

    def render(self, component: UiComponent) -> Out:
        """How ``component`` shows in this channel (``nothing()`` for hidden components)."""
        rich = component.rich_component
        if not rich.visible:
            return self.nothing()
        hook = _hook_name(type(rich))
        rendered = getattr(self, hook)(rich) if hook is not None else None
        return self.simple(component.simple_component) if rendered is None else rendered

    @abstractmethod
    def nothing(self) -> Out:
        """The output for a component that shows nothing."""

    @abstractmethod
    def simple(self, simple: SimpleComponent | None) -> Out:
        """The deliberate fallback: the component's simple (plain) form."""

    # -- one no-op hook per rich component type ------------------------------------------

    def on_text(self, text: RichTextComponent) -> Out | None:
        return None

    def on_card(self, card: CardComponent) -> Out | None:
        return None

    def on_notification(self, note: NotificationComponent) -> Out | None:
        return None

    def on_status_card(self, card: StatusCardComponent) -> Out | None:
        return None

    def on_progress_bar(self, bar: ProgressBarComponent) -> Out | None:
        return None

    def on_progress_display(self, progress: ProgressDisplayComponent) -> Out | None:
        return None

    def on_status_indicator(self, status: StatusIndicatorComponent) -> Out | None:
        return None

    def on_badge(self, badge: BadgeComponent) -> Out | None:
        return None

    def on_icon_text(self, icon: IconTextComponent) -> Out | None:
        return None

    def on_log_viewer(self, log: LogViewerComponent) -> Out | None:
        return None

    def on_task_list(self, tasks: TaskListComponent) -> Out | None:
        return None

    def on_button(self, button: ButtonComponent) -> Out | None:
        return None

    def on_button_group(self, group: ButtonGroupComponent) -> Out | None:
        return None

    def on_dataframe(self, table: DataFrameComponent) -> Out | None:
        return None

    def on_chart(self, chart: ChartComponent) -> Out | None:
        return None

    def on_artifact(self, artifact: ArtifactComponent) -> Out | None:
        return None

    def on_status_bar_update(self, bar: StatusBarUpdateComponent) -> Out | None:
        return None

    def on_task_tracker_update(self, update: TaskTrackerUpdateComponent) -> Out | None:
        return None

    def on_tool_status(self, status: ToolStatusComponent) -> Out | None:
        """Yielded without a simple form: its plain line, built only here."""
        return self.simple(SimpleTextComponent(text=status.summary()))

    def on_chat_input_update(self, update: ChatInputUpdateComponent) -> Out | None:
        return self.nothing()

    def on_sources(self, sources: SourcesComponent) -> Out | None:
        return None

    def on_sign_in(self, prompt: SignInComponent) -> Out | None:
        return None

    def on_approval(self, approval: ApprovalComponent) -> Out | None:
        return None


_HOOKS: dict[type[RichComponent], Callable[..., object]] = {
    RichTextComponent: ComponentRenderer.on_text,
    CardComponent: ComponentRenderer.on_card,
    NotificationComponent: ComponentRenderer.on_notification,
    StatusCardComponent: ComponentRenderer.on_status_card,
    ProgressBarComponent: ComponentRenderer.on_progress_bar,
    ProgressDisplayComponent: ComponentRenderer.on_progress_display,
    StatusIndicatorComponent: ComponentRenderer.on_status_indicator,
    BadgeComponent: ComponentRenderer.on_badge,
    IconTextComponent: ComponentRenderer.on_icon_text,
    LogViewerComponent: ComponentRenderer.on_log_viewer,
    TaskListComponent: ComponentRenderer.on_task_list,
    ButtonComponent: ComponentRenderer.on_button,
    ButtonGroupComponent: ComponentRenderer.on_button_group,
    DataFrameComponent: ComponentRenderer.on_dataframe,
    ChartComponent: ComponentRenderer.on_chart,
    ArtifactComponent: ComponentRenderer.on_artifact,
    StatusBarUpdateComponent: ComponentRenderer.on_status_bar_update,
    TaskTrackerUpdateComponent: ComponentRenderer.on_task_tracker_update,
    ToolStatusComponent: ComponentRenderer.on_tool_status,
    ChatInputUpdateComponent: ComponentRenderer.on_chat_input_update,
    SourcesComponent: ComponentRenderer.on_sources,
    SignInComponent: ComponentRenderer.on_sign_in,
    ApprovalComponent: ComponentRenderer.on_approval,
}
"""Each rich type's hook (looked up by name, so a channel's override is the one called)."""

_NAMES = {kind: hook.__name__ for kind, hook in _HOOKS.items()}


def _hook_name(kind: type[RichComponent]) -> str | None:
    """The hook of ``kind`` or of its nearest known base (a subclassed component renders as
    its base); ``None`` for types no hook knows: they render in their simple form."""
    for base in kind.__mro__:
        name = _NAMES.get(base)
        if name is not None:
            return name
    return None
