"""The status bar and chat input every turn updates: working, then ready (or an error).

Both are single client widgets, so these instructions are shared values: never mutate a
yielded component.
"""

from __future__ import annotations

from agent_core.components import (
    ChatInputUpdateComponent,
    StatusBarUpdateComponent,
    UiComponent,
)
from agent_core.components.ui_state import BarStatus

WORKING = UiComponent.of(
    StatusBarUpdateComponent(id="status-bar", status="working", message="Working...")
)
IDLE = UiComponent.of(StatusBarUpdateComponent(id="status-bar", status="idle", message="Ready"))
INPUT_READY = UiComponent.of(ChatInputUpdateComponent(id="chat-input", disabled=False, focus=True))


def closing_components(status: BarStatus, message: str) -> list[UiComponent]:
    """What ends a turn: the status bar's last word and the chat input enabled again.

    >>> [c.rich_component.type.value for c in closing_components("idle", "Ready")]
    ['status_bar_update', 'chat_input_update']
    """
    if status == "idle":
        return [IDLE, INPUT_READY]
    bar = StatusBarUpdateComponent(id="status-bar", status=status, message=message)
    return [UiComponent.of(bar), INPUT_READY]
