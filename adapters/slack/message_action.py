"""A message shortcut ("Ask Threadline about this", ``message_action``) read: who asks, about
which message, and where the answer goes (that message's thread).

The asker is the shortcut's ``user`` (Slack signs the payload); the message, its author and
its files are what the asker pointed at: data, quoted for the model (``adapters.quoting``).

>>> action = read_message_action({"type": "message_action", "callback_id": "ask",
...     "team": {"id": "T1"}, "user": {"id": "U1"}, "channel": {"id": "C1"},
...     "message": {"ts": "5.0", "user": "U2", "text": "revenue?"}})
>>> ctx = action_context(action)
>>> ctx.metadata["user_id"], ctx.metadata["thread_id"], action.message.user
('U1', '5.0', 'U2')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from adapters.files import SharedFile
from adapters.quoting import about_message
from adapters.slack.context import PLATFORM
from adapters.slack.payloads import ActionUser, FileObject, Id, Ref, Shape, parse_shape
from agent_core.users import RequestContext


class ActedMessage(Shape):
    """The message a shortcut was run on."""

    ts: Id
    thread_ts: str | None = None
    text: str | None = None
    user: str | None = None
    bot_id: str | None = None
    files: list[FileObject] = Field(default_factory=list)


class MessageAction(Shape):
    """A ``message_action`` payload."""

    type: str
    callback_id: str
    user: ActionUser
    channel: Ref
    message: ActedMessage
    team: Ref | None = None
    enterprise: Ref | None = None
    trigger_id: str | None = None
    response_url: str | None = None
    is_enterprise_install: bool | None = None


def read_message_action(payload: Mapping[str, Any]) -> MessageAction:
    """The shortcut, or ``MalformedPayload``."""
    action: MessageAction = parse_shape(MessageAction, payload, "message_action")
    return action


def answer_thread(action: MessageAction) -> str:
    """The thread the answer goes to: the message's own, else the message starts one."""
    return action.message.thread_ts or action.message.ts


def action_context(action: MessageAction) -> RequestContext:
    """The asker's ``RequestContext``, in the thread of the message pointed at."""
    channel = action.channel.id or ""
    metadata: dict[str, Any] = {
        "platform": PLATFORM,
        "workspace_id": (action.team and action.team.id) or action.user.team_id or "",
        "user_id": action.user.id,
        "user_name": action.user.username or action.user.name,
        "channel_id": channel,
        "thread_id": answer_thread(action),
        "is_dm": channel.startswith("D"),
        "slack_event_type": "message_action",
        "slack_enterprise_id": action.enterprise and action.enterprise.id,
    }
    return RequestContext(metadata={k: v for k, v in metadata.items() if v is not None})


def message_files(action: MessageAction) -> list[SharedFile]:
    """The files of the message, as shared files are read today (only the asker's own are
    then loaded: ``bots.files``)."""
    return [
        SharedFile(
            name=item.name or item.title or item.id,
            url=item.url_private or "",
            owner=item.user or action.message.user or "",
            size=item.size,
            file_id=item.id,
        )
        for item in action.message.files
        if item.mode != "tombstone"
    ]


def action_question(action: MessageAction) -> str:
    """What the model is asked: the message quoted as data (``adapters.quoting``)."""
    message = action.message
    author = f"<@{message.user}>" if message.user else f"the app {message.bot_id or ''}".strip()
    names = [file.name for file in message_files(action)]
    return about_message(message.text or "", author=author, files=names or None)
