"""The component envelope every turn streams: ``UiComponent`` = rich form + simple form.

A component has a stable ``id``; later versions of it carry the same id and a lifecycle of
``update``/``replace``/``remove``, so a channel can edit a message it already posted.
``audience`` says who may see it: ``"requester"`` marks detail that exists only because of
an admin-only UI feature (tool arguments, tool errors, ...); channels deliver it privately
(inline in a DM, ephemeral / targeted in shared conversations).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from agent_core.clock import SYSTEM_CLOCK
from agent_core.components.simple import SimpleComponent, SimpleTextComponent

_ID_PREFIX = os.urandom(6).hex()
_VERSIONED = frozenset(("lifecycle", "timestamp"))
_set_attribute = object.__setattr__
_id_counter = itertools.count(1)


def new_component_id() -> str:
    """A process-unique id: a random per-process prefix and a counter (cheap, collision-free
    across processes and restarts)."""
    return f"{_ID_PREFIX}{next(_id_counter):x}"


class ComponentType(StrEnum):
    TEXT = "text"
    CARD = "card"
    STATUS_CARD = "status_card"
    PROGRESS_DISPLAY = "progress_display"
    PROGRESS_BAR = "progress_bar"
    LOG_VIEWER = "log_viewer"
    BADGE = "badge"
    ICON_TEXT = "icon_text"
    TASK_LIST = "task_list"
    BUTTON = "button"
    BUTTON_GROUP = "button_group"
    DATAFRAME = "dataframe"
    CHART = "chart"
    STATUS_INDICATOR = "status_indicator"
    NOTIFICATION = "notification"
    ARTIFACT = "artifact"
    STATUS_BAR_UPDATE = "status_bar_update"
    TASK_TRACKER_UPDATE = "task_tracker_update"
    CHAT_INPUT_UPDATE = "chat_input_update"
    SOURCES = "sources"
    IMAGE = "image"
    SIGN_IN = "sign_in"
    APPROVAL = "approval"
    TOOL_REFUSED = "tool_refused"
    TOOL_STATUS = "tool_status"


class ComponentLifecycle(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    REMOVE = "remove"


Audience = Literal["everyone", "requester"]


class RichComponent(BaseModel):
    """Base of the rich components; subclasses add typed fields and fix ``type``.

    >>> from agent_core.components import NotificationComponent
    >>> note = NotificationComponent(message="Saved")
    >>> later = note.update(message="Saved twice")
    >>> (later.id == note.id, later.lifecycle.value)
    (True, 'update')
    """

    # Schemas are built on first use, not at import: ``import agent_core`` stays fast.
    model_config = ConfigDict(defer_build=True)

    id: str = Field(default_factory=new_component_id)
    type: ComponentType
    lifecycle: ComponentLifecycle = ComponentLifecycle.CREATE
    children: list[str] = Field(default_factory=list)
    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)
    visible: bool = True
    interactive: bool = False

    def update(self, **changes: Any) -> Self:
        """A newer version of this component (same id) with ``changes`` applied."""
        return self._version(ComponentLifecycle.UPDATE, changes)

    def replace(self, **changes: Any) -> Self:
        """Like ``update`` but tells renderers to redraw the component from scratch."""
        return self._version(ComponentLifecycle.REPLACE, changes)

    def remove(self) -> Self:
        """Tells renderers to take the component away."""
        return self._version(ComponentLifecycle.REMOVE, {"visible": False})

    def hide(self) -> Self:
        return self.update(visible=False)

    def show(self) -> Self:
        return self.update(visible=True)

    def _version(self, lifecycle: ComponentLifecycle, changes: dict[str, Any]) -> Self:
        cls = type(self)
        fields = cls.__pydantic_fields__
        if not changes.keys() <= fields.keys():
            unknown = sorted(changes.keys() - fields.keys())
            raise TypeError(f"{cls.__name__} has no field(s) {unknown}")
        # ``model_copy(update=...)`` without its generic copying: every streamed text update
        # and every tool status is one of these
        version = cls.__new__(cls)
        values = {**self.__dict__, **changes, "lifecycle": lifecycle}
        values["timestamp"] = SYSTEM_CLOCK.now()
        fields_set = self.__pydantic_fields_set__ | changes.keys() | _VERSIONED
        _set_attribute(version, "__dict__", values)
        _set_attribute(version, "__pydantic_fields_set__", fields_set)
        _set_attribute(version, "__pydantic_private__", _own(self.__pydantic_private__))
        _set_attribute(version, "__pydantic_extra__", _own(self.__pydantic_extra__))
        return version


def _own(attributes: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if attributes is None else dict(attributes)


class UiComponent(BaseModel):
    """What the agent yields: a rich component, its plain fallback, and its audience.

    >>> from agent_core.components import RichTextComponent, SimpleTextComponent
    >>> c = UiComponent(rich_component=RichTextComponent(content="hi"),
    ...                 simple_component=SimpleTextComponent(text="hi"))
    >>> c.audience
    'everyone'
    """

    model_config = ConfigDict(defer_build=True)

    rich_component: SerializeAsAny[RichComponent]
    simple_component: SerializeAsAny[SimpleComponent] | None = None
    audience: Audience = "everyone"
    ui_feature: str | None = None
    """The UI feature that made this component exist, when one did (``tool_arguments``...)."""

    @classmethod
    def of(
        cls,
        rich: RichComponent,
        text: str | None = None,
        *,
        audience: Audience = "everyone",
        ui_feature: str | None = None,
    ) -> UiComponent:
        """``rich`` with ``text`` (when given) as its plain form.

        >>> from agent_core.components import NotificationComponent
        >>> shown = UiComponent.of(NotificationComponent(message="Saved"), "Saved")
        >>> shown.simple_component.text, shown.audience
        ('Saved', 'everyone')
        """
        simple = SimpleTextComponent(text=text) if text is not None else None
        return cls(
            rich_component=rich, simple_component=simple, audience=audience, ui_feature=ui_feature
        )

    @property
    def id(self) -> str:
        return self.rich_component.id

    @property
    def is_private(self) -> bool:
        return self.audience == "requester"


ComponentStream: TypeAlias = AsyncIterator[UiComponent]
"""What a turn (and each of its streaming stages) yields: components as soon as each exists."""
