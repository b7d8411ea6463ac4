"""Pure converters from bolt payloads to the agent's ``RequestContext`` and thread key.

Everything here reads the *signed* request body only (bolt verified it before any listener
runs) and never the message text, so identity cannot be spoofed by what someone types::

    event body (app_mention, message)  -> event_context(body)
    slash command body                 -> command_context(body, thread_ts=...)
    block_actions body (button clicks) -> action_context(body)

``thread_key`` is the conversation id the agent stores history under:
``slack:{team}:{channel}:{thread_ts}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent_core.users import RequestContext

PLATFORM = "slack"
PRIVATE_THREAD = "private"
"""The thread id of private slash-command answers: one private conversation per channel."""

_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_LEADING_JUNK = re.compile(r"^[\s,:;.!-]+")


def thread_key(team_id: str, channel_id: str, thread_ts: str) -> str:
    """The conversation id of one Slack thread.

    >>> thread_key("T1", "C1", "1700000000.000100")
    'slack:T1:C1:1700000000.000100'
    """
    return f"slack:{team_id}:{channel_id}:{thread_ts}"


def user_key(team_id: str, user_id: str) -> str:
    """The ``User.id`` of one Slack user. ``user_key("T1", "U1") == "slack:T1:U1"``"""
    return f"slack:{team_id}:{user_id}"


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """Remove mentions of the bot (and the punctuation people type after them).

    Without a known ``bot_user_id`` only a leading mention is removed.

    >>> strip_mention("<@UBOT> what is up?", "UBOT")
    'what is up?'
    >>> strip_mention("hey <@UBOT|threadline>, and <@U2>?", "UBOT")
    'hey, and <@U2>?'
    >>> strip_mention("<@UBOT>: hi", None)
    'hi'
    """
    if bot_user_id is None:
        match = _MENTION.match(text.lstrip())
        stripped = text.lstrip()[match.end() :] if match else text
    else:
        stripped = _MENTION.sub(lambda m: "" if m.group(1) == bot_user_id else m.group(0), text)
        stripped = re.sub(r"\s+([,:;])", r"\1", stripped)
        stripped = re.sub(r"(^|\s)[,:;](?=\s|$)", r"\1", stripped)
    return re.sub(r"[ \t]{2,}", " ", _LEADING_JUNK.sub("", stripped)).strip()


def workspace_of(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(team_id, enterprise_id)`` of the installation a request belongs to.

    Works for event bodies, slash commands (form fields) and interaction payloads.

    >>> workspace_of({"team_id": "T1", "enterprise_id": "E1"})
    ('T1', 'E1')
    >>> workspace_of({"team": {"id": "T2"}, "enterprise": None})
    ('T2', None)
    """
    team = body.get("team_id") or _id_of(body.get("team")) or ""
    event = body.get("event")
    if not team and isinstance(event, Mapping):
        team = event.get("team") or ""
    enterprise = body.get("enterprise_id") or _id_of(body.get("enterprise"))
    return str(team), (str(enterprise) if enterprise else None)


def _id_of(value: Any) -> str | None:
    if isinstance(value, Mapping):
        found = value.get("id")
        return str(found) if found else None
    return None


def event_thread_ts(event: Mapping[str, Any]) -> str:
    """The thread an event belongs to; a top-level message starts a thread at its own ts."""
    return str(event.get("thread_ts") or event.get("ts") or event.get("event_ts") or "")


def is_dm_event(event: Mapping[str, Any]) -> bool:
    """True only for a message in the bot's own 1:1 DM (``channel_type`` ``im``).

    A ``D...`` channel id alone is not enough: people's DMs with each other have such ids
    too, and admin-only detail renders inline in a DM.
    """
    return event.get("channel_type") == "im"


def _context(metadata: dict[str, Any]) -> RequestContext:
    return RequestContext(metadata={k: v for k, v in metadata.items() if v is not None})


def event_context(body: Mapping[str, Any]) -> RequestContext:
    """The ``RequestContext`` of an ``app_mention`` / ``message`` event callback.

    >>> ctx = event_context({"team_id": "T1", "event": {"type": "message",
    ...     "channel_type": "im", "channel": "D1", "user": "U1", "ts": "5.0"}})
    >>> (ctx.metadata["thread_id"], ctx.metadata["is_dm"], ctx.metadata["workspace_id"])
    ('5.0', True, 'T1')
    """
    event: Mapping[str, Any] = body.get("event") or {}
    team, enterprise = workspace_of(body)
    profile = event.get("user_profile") or {}
    return _context(
        {
            "platform": PLATFORM,
            "workspace_id": team,
            "enterprise_id": enterprise,
            "user_id": event.get("user"),
            "user_name": profile.get("display_name") or profile.get("real_name") or None,
            "channel_id": event.get("channel"),
            "thread_id": event_thread_ts(event),
            "is_dm": is_dm_event(event),
            "event_type": event.get("type"),
        }
    )


def command_context(body: Mapping[str, Any], *, thread_ts: str) -> RequestContext:
    """The ``RequestContext`` of a slash command answered in ``thread_ts``.

    >>> ctx = command_context({"team_id": "T1", "channel_id": "C1", "user_id": "U1",
    ...     "user_name": "ana", "command": "/ask", "text": "hi"}, thread_ts="9.0")
    >>> (ctx.metadata["command"], ctx.metadata["user_name"], ctx.metadata["is_dm"])
    ('/ask', 'ana', False)
    """
    team, enterprise = workspace_of(body)
    channel = str(body.get("channel_id") or "")
    return _context(
        {
            "platform": PLATFORM,
            "workspace_id": team,
            "enterprise_id": enterprise,
            "user_id": body.get("user_id"),
            "user_name": body.get("user_name"),
            "channel_id": channel,
            "thread_id": thread_ts,
            # a command may come from anyone's DM (with a colleague, say): never "the bot's DM"
            "is_dm": False,
            "is_private": thread_ts == PRIVATE_THREAD,
            "command": body.get("command"),
        }
    )


def action_context(body: Mapping[str, Any]) -> RequestContext:
    """The ``RequestContext`` of a ``block_actions`` payload (a button click).

    >>> ctx = action_context({"team": {"id": "T1"}, "user": {"id": "U2", "username": "bo"},
    ...     "channel": {"id": "C1"}, "container": {"channel_id": "C1", "message_ts": "7.0",
    ...     "thread_ts": "6.0"}})
    >>> (ctx.metadata["user_id"], ctx.metadata["thread_id"])
    ('U2', '6.0')
    """
    team, enterprise = workspace_of(body)
    user: Mapping[str, Any] = body.get("user") or {}
    container: Mapping[str, Any] = body.get("container") or {}
    message: Mapping[str, Any] = body.get("message") or {}
    channel = _id_of(body.get("channel")) or container.get("channel_id") or ""
    thread = container.get("thread_ts") or message.get("thread_ts")
    if not thread:  # a private (ephemeral) answer outside a thread, or a top-level message
        thread = PRIVATE_THREAD if container.get("is_ephemeral") else None
    thread = thread or container.get("message_ts") or message.get("ts")
    return _context(
        {
            "platform": PLATFORM,
            "workspace_id": team or user.get("team_id"),
            "enterprise_id": enterprise,
            "user_id": user.get("id"),
            "user_name": user.get("username") or user.get("name"),
            "channel_id": channel,
            "thread_id": thread,
            # only the bot posts non-ephemeral messages with buttons, so a D... channel
            # here is the bot's own DM
            "is_dm": str(channel).startswith("D") and not container.get("is_ephemeral"),
            # private only when the answer is (an ephemeral outside a thread); a click on
            # an ephemeral in a thread is answered in the thread, where everyone sees it
            "is_private": thread == PRIVATE_THREAD,
        }
    )


def conversation_id(context: RequestContext) -> str:
    """The thread key of a context built by this module."""
    meta = context.metadata
    return thread_key(meta["workspace_id"], meta["channel_id"], meta["thread_id"])
