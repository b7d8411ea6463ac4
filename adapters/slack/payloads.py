"""The shapes of the Slack payloads Threadline reads, as pydantic models.

A signed payload is still only as well-formed as its sender made it: an integration's
``app_mention`` without ``user``, a number where Slack sends text, ``event: null``.
``read_delivery`` reads a whole delivery once, before bolt sees it, into a
``SlackDelivery``; the listeners and the converters (``adapters.slack.context``,
``adapters.slack.controls``) take its models, never trusting dict keys::

    event_callback      -> EventCallback (+ MessageEvent, AssistantThreadEvent, HomeEvent,
                           UserChangeEvent by ``event.type``; other events: their type only)
    slash command       -> SlashCommand
    block_actions       -> BlockActions
    other interactions  -> Interaction (the objects bolt reads are objects)
    url_verification    -> UrlVerification

Anything else raises ``agent_core.errors.MalformedPayload`` (a ``ValueError``) with a short
reason and never the payload itself. Unknown fields are ignored: Slack adds fields all the time.

>>> read_delivery({"type": "event_callback", "team_id": "T1",
...                "event": {"type": "app_mention", "channel": "C1", "ts": "1.0"}}).kind
'event_callback'
>>> read_delivery({"type": "event_callback", "event": None})
Traceback (most recent call last):
...
agent_core.errors.MalformedPayload: event_callback: event: input should be a valid dictionary
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticError

from agent_core.errors import MalformedPayload

__all__ = ["MalformedPayload"]  # with the models and readers below

USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
"""Message subtypes a person writes (edits, joins and bot messages are not questions)."""


Id = Annotated[str, StringConstraints(min_length=1)]
"""An id (user, channel, ts...): text, never empty."""


class Shape(BaseModel):
    """Base of the payload models: immutable, unknown fields ignored, no coercion of a
    number into text (``strict``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class Ref(Shape):
    """``{"id": ...}``: a team, a channel, an enterprise."""

    id: str | None = None


class UserProfile(Shape):
    display_name: str | None = None
    real_name: str | None = None


class Event(Shape):
    """An event's ``type``: every event model has one."""

    type: str


class FileObject(Shape):
    """A file shared with a message (``event.files``); Slack Connect and deleted files come
    without ``url_private``."""

    id: Id
    name: str | None = None
    title: str | None = None
    size: int | None = None
    url_private: str | None = None
    user: str | None = None
    mode: str | None = None


class MessageEvent(Event):
    """``app_mention`` or a person's ``message``: what a question is read from."""

    channel: Id
    ts: Id
    user: Id | None = None
    text: str | None = None
    thread_ts: str | None = None
    event_ts: str | None = None
    channel_type: str | None = None
    subtype: str | None = None
    bot_id: str | None = None
    team: str | None = None
    user_team: str | None = None
    """The asker's own workspace (another organisation's, in a Slack Connect channel)."""
    user_profile: UserProfile | None = None
    files: list[FileObject] = Field(default_factory=list)


class OtherEvent(Event):
    """An event Threadline does not read beyond its type (edits, joins, bot messages...)."""

    subtype: str | None = None
    user: Any = None


class AssistantThread(Shape):
    user_id: Id
    channel_id: Id
    thread_ts: Id


class AssistantThreadEvent(Event):
    type: Literal["assistant_thread_started"]
    assistant_thread: AssistantThread


class HomeEvent(Event):
    type: Literal["app_home_opened"]
    user: Id
    channel: str | None = None
    tab: str | None = None


class UserChangeEvent(Event):
    type: Literal["user_change"]
    user: Ref


class EventCallback(Shape):
    """An Events API delivery (``event`` stays a dict here: ``read_event`` types it)."""

    type: Literal["event_callback"]
    team_id: str | None = None
    enterprise_id: str | None = None
    event_id: str | None = None
    event: dict[str, Any]
    team: Ref | None = None
    enterprise: Ref | None = None
    authorizations: list[dict[str, Any]] | None = None
    is_ext_shared_channel: bool | None = None


class UrlVerification(Shape):
    type: Literal["url_verification"]
    challenge: str


class SlashCommand(Shape):
    """A slash command's form fields."""

    command: Id
    user_id: Id
    channel_id: Id
    team_id: str | None = None
    enterprise_id: str | None = None
    user_name: str | None = None
    text: str | None = None
    response_url: str | None = None
    is_enterprise_install: str | None = None


class ActionUser(Shape):
    id: Id
    username: str | None = None
    name: str | None = None
    team_id: str | None = None


class Action(Shape):
    action_id: str
    value: str | None = None
    block_id: str | None = None
    type: str | None = None


class Container(Shape):
    type: str | None = None
    channel_id: str | None = None
    message_ts: str | None = None
    thread_ts: str | None = None
    is_ephemeral: bool | None = None


class ClickedMessage(Shape):
    ts: str | None = None
    thread_ts: str | None = None
    text: str | None = None
    blocks: list[dict[str, Any]] | None = None


class Interaction(Shape):
    """Any interactive payload: the objects bolt reads must be objects."""

    type: str
    user: ActionUser | None = None
    team: Ref | None = None
    enterprise: Ref | None = None
    channel: Ref | None = None
    container: Container | None = None
    message: ClickedMessage | None = None
    view: dict[str, Any] | None = None
    actions: list[dict[str, Any]] | None = None
    response_url: str | None = None
    is_enterprise_install: bool | None = None


class Click(Interaction):
    """An interaction someone made: who, and where (``action_context`` reads it)."""

    user: ActionUser


class BlockActions(Click):
    """A button click: who clicked which action where."""

    type: Literal["block_actions"]
    actions: list[Action] = Field(min_length=1)  # type: ignore[assignment]


Delivery = EventCallback | UrlVerification | SlashCommand | BlockActions | Interaction

_EVENTS: dict[str, type[Event]] = {
    "assistant_thread_started": AssistantThreadEvent,
    "app_home_opened": HomeEvent,
    "user_change": UserChangeEvent,
}


def parse_shape(kind: type[Shape], payload: object, what: str) -> Any:
    """``kind`` validated from ``payload``, or ``MalformedPayload`` naming the first bad
    field (its location and problem, never its value)."""
    if not isinstance(payload, Mapping):
        raise MalformedPayload(f"{what}: not an object ({_json_type(payload)})")
    try:
        return kind.model_validate(payload)
    except PydanticError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise MalformedPayload(f"{what}: {where}: {first['msg'].lower()}") from None


def _json_type(value: object) -> str:
    names = {
        type(None): "null",
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
    }
    return names.get(type(value), type(value).__name__)


def read_event(event: object) -> Event:
    """The typed ``event`` of an event callback; only a person's message or a mention is
    read in full (others by type).

    >>> read_event({"type": "message", "subtype": "message_changed"}).type
    'message'
    """
    if not isinstance(event, Mapping):
        raise MalformedPayload(f"event_callback: event: not an object ({_json_type(event)})")
    kind = event.get("type")
    if kind == "app_mention" or (kind == "message" and event.get("subtype") in USER_SUBTYPES):
        message: MessageEvent = parse_shape(MessageEvent, event, "event")
        return message
    model: Event = parse_shape(_EVENTS.get(str(kind), OtherEvent), event, "event")
    return model


@dataclass(frozen=True, slots=True)
class SlackDelivery:
    """What ``read_delivery`` found in a verified delivery: its ``kind``, its model, the
    typed ``event`` of an event callback, and the ``body`` as Slack sent it (parsed once;
    the listeners and converters read the models, never the body again).

    >>> read = read_delivery({"command": "/ask", "user_id": "U1", "channel_id": "C1"})
    >>> read.kind, type(read.delivery).__name__
    ('command', 'SlashCommand')
    """

    kind: str
    delivery: Delivery
    body: Mapping[str, Any]
    event: Event | None = None


def read_delivery(body: object) -> SlackDelivery:
    """Check a whole delivery (the parsed JSON, or a command's form fields), once; raises
    ``MalformedPayload``."""
    if not isinstance(body, Mapping):
        raise MalformedPayload(f"payload: not an object ({_json_type(body)})")
    kind = body.get("type")
    if kind == "event_callback":
        callback: EventCallback = parse_shape(EventCallback, body, "event_callback")
        return SlackDelivery("event_callback", callback, body, read_event(body.get("event")))
    if kind == "url_verification":
        verification = parse_shape(UrlVerification, body, "url_verification")
        return SlackDelivery("url_verification", verification, body)
    if kind is None and "command" in body:
        return SlackDelivery("command", parse_shape(SlashCommand, body, "command"), body)
    if kind == "block_actions":
        return SlackDelivery(
            "block_actions", parse_shape(BlockActions, body, "block_actions"), body
        )
    if isinstance(kind, str):
        return SlackDelivery(kind, parse_shape(Interaction, body, kind), body)
    raise MalformedPayload("payload: no type")
