"""The status bar and chat input every turn updates: working, then ready (or an error).

Both are single client widgets, so these instructions are shared values, built on first use:
never mutate a yielded component.
"""

from __future__ import annotations

import functools

from agent_core.components import (
    ChatInputUpdateComponent,
    StatusBarUpdateComponent,
    UiComponent,
)
from agent_core.components.ui_state import BarStatus


@functools.cache
def working() -> UiComponent:
    """The status bar saying the agent is at work (built on first use, then shared)."""
    return UiComponent.of(
        StatusBarUpdateComponent(id="status-bar", status="working", message="Working...")
    )


@functools.cache
def _idle() -> tuple[UiComponent, UiComponent]:
    return (
        UiComponent.of(StatusBarUpdateComponent(id="status-bar", status="idle", message="Ready")),
        _input_ready(),
    )


@functools.cache
def _input_ready() -> UiComponent:
    return UiComponent.of(ChatInputUpdateComponent(id="chat-input", disabled=False, focus=True))


def closing_components(status: BarStatus, message: str) -> list[UiComponent]:
    """What ends a turn: the status bar's last word and the chat input enabled again.

    >>> [c.rich_component.type.value for c in closing_components("idle", "Ready")]
    ['status_bar_update', 'chat_input_update']
    """
    if status == "idle" and message == "Ready":
        return list(_idle())
    bar = StatusBarUpdateComponent(id="status-bar", status=status, message=message)
    return [UiComponent.of(bar), _input_ready()]
