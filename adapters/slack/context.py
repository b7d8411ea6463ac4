"""Pure converters from Slack's payload models to the agent's ``RequestContext`` and keys.

Everything here reads the *signed* delivery only (``bots.slack.ingress`` verified it and
``adapters.slack.payloads.read_delivery`` read it, once, into models); who asks comes from
its fields, never from the message text, so identity cannot be spoofed by what someone
types. The converters take those models, so a listener never meets a malformed payload::

    event callback + MessageEvent     -> event_context(callback, event), message_text(event,
                                         bot), delivery_key(callback, event), is_from_person,
                                         reply_thread, mention_in_thread
    SlashCommand                      -> command_context(command, thread_ts=...),
                                         command_question(command)
    a Click (button clicks)           -> action_context(click)
    AssistantThreadEvent              -> assistant_thread_context(callback, event)
    HomeEvent                         -> home_context(callback, event)
    a context's metadata              -> reply_target(...): where its answer goes

The metadata is an ``agent_core.channel.ChannelMetadata``: the keys every channel fills
plus Slack's extras, prefixed ``slack_`` (``slack_enterprise_id``, ``slack_event_type``).
``thread_key`` is the conversation id the agent stores history under:
``slack:{team}:{channel}:{thread_ts}``; ``conversation_id(context)`` reads it from a context.
``turn_key`` is the turn queue's ordering key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapters.slack.payloads import (
    USER_SUBTYPES,
    AssistantThreadEvent,
    Click,
    Event,
    EventCallback,
    HomeEvent,
    MalformedPayload,
    MessageEvent,
    SlashCommand,
    read_delivery,
    read_event,
)
from agent_core.channel import ChannelMetadata, Platform
from agent_core.users import RequestContext

# with the converters below (the readers are the examples' way to make models)
__all__ = ["USER_SUBTYPES", "MalformedPayload", "read_delivery", "read_event"]


PLATFORM: Platform = "slack"
PRIVATE_THREAD = "private"
"""The thread id of private slash-command answers: one private conversation per channel."""
PRIVATE_FLAGS = ("private", "-p", "--private")

_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_LEADING_JUNK = re.compile(r"^[\s,:;.!-]+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,:;])")
_LONE_PUNCTUATION = re.compile(r"(^|\s)[,:;](?=\s|$)")
_BLANK_RUN = re.compile(r"[ \t]{2,}")


def thread_key(team_id: str, channel_id: str, thread_ts: str) -> str:
    """The conversation id of one Slack thread.

    >>> thread_key("T1", "C1", "1700000000.000100")
    'slack:T1:C1:1700000000.000100'
    """
    return f"slack:{team_id}:{channel_id}:{thread_ts}"


def user_key(team_id: str, user_id: str, enterprise_id: str | None = None) -> str:
    """The ``User.id`` of one Slack user: of their workspace, or of their Enterprise Grid
    organisation (a person of several workspaces of an org is one person there, with one
    user id: roles, budgets, memory and schedules follow them).

    >>> user_key("T1", "U1"), user_key("T1", "W1", "E1")
    ('slack:T1:U1', 'slack:E1:W1')
    """
    return f"slack:{enterprise_id or team_id}:{user_id}"


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
    else:  # each pattern runs only where it can match: this is on every mention's ack path
        if "<@" in text:
            stripped = _MENTION.sub(lambda m: "" if m.group(1) == bot_user_id else m.group(0), text)
        else:
            stripped = text
        if "," in stripped or ":" in stripped or ";" in stripped:
            stripped = _LONE_PUNCTUATION.sub(r"\1", _SPACE_BEFORE_PUNCTUATION.sub(r"\1", stripped))
    stripped = _LEADING_JUNK.sub("", stripped)
    if "  " in stripped or "\t" in stripped:
        stripped = _BLANK_RUN.sub(" ", stripped)
    return stripped.strip()


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


def workspace_of_delivery(
    delivery: EventCallback | SlashCommand | Click, event: Event | None = None
) -> tuple[str, str | None]:
    """``(team_id, enterprise_id)`` of the installation a delivery belongs to.

    >>> workspace_of_delivery(SlashCommand(command="/ask", user_id="U1", channel_id="C1",
    ...                                    team_id="T1"))
    ('T1', None)
    """
    if isinstance(delivery, SlashCommand):
        return delivery.team_id or "", delivery.enterprise_id or None
    if isinstance(delivery, EventCallback):
        team = delivery.team_id or (delivery.team and delivery.team.id) or ""
        if not team and isinstance(event, MessageEvent):
            team = event.team or ""
        enterprise = delivery.enterprise_id or (delivery.enterprise and delivery.enterprise.id)
        return team, enterprise or None
    team = (delivery.team and delivery.team.id) or ""
    return team, (delivery.enterprise and delivery.enterprise.id) or None


def event_thread_ts(event: MessageEvent) -> str:
    """The thread an event belongs to; a top-level message starts a thread at its own ts."""
    return event.thread_ts or event.ts or event.event_ts or ""


def is_dm_event(event: MessageEvent) -> bool:
    """True only for a message in the bot's own 1:1 DM (``channel_type`` ``im``).

    A ``D...`` channel id alone is not enough: people's DMs with each other have such ids
    too, and admin-only detail renders inline in a DM.
    """
    return event.channel_type == "im"


def delivery_key(callback: EventCallback, event: MessageEvent) -> str:
    """The delivery key of a message event: Slack's retries of it, and the ``app_mention``
    Slack also delivers as a plain ``message``, share it.

    >>> read = read_delivery({"type": "event_callback", "team_id": "T1",
    ...                       "event": {"type": "message", "channel": "C1", "ts": "1.5"}})
    >>> delivery_key(read.delivery, read.event)
    'slack:message:T1:C1:1.5'
    """
    team, _ = workspace_of_delivery(callback, event)
    return f"slack:message:{team}:{event.channel}:{event.ts}"


def message_text(event: MessageEvent, bot_user_id: str | None) -> str:
    """What a message or mention asks: its text without mentions of the bot.

    >>> message_text(read_event({"type": "app_mention", "text": "<@UBOT> how many?",
    ...                          "channel": "C1", "ts": "1.0"}), "UBOT")
    'how many?'
    """
    return strip_mention(event.text or "", bot_user_id)


def is_from_person(event: Event, bot_user_id: str | None) -> bool:
    """A message a person wrote: not an edit, a bot's message or the bot's own.

    >>> is_from_person(read_event({"type": "message", "user": "U1", "text": "hi",
    ...                            "channel": "C1", "ts": "1.0"}), "UBOT")
    True
    >>> is_from_person(read_event({"type": "message", "subtype": "message_changed"}), "UBOT")
    False
    """
    if not isinstance(event, MessageEvent) or event.subtype not in USER_SUBTYPES or event.bot_id:
        return False
    return event.user is not None and event.user != bot_user_id


def reply_thread(event: MessageEvent, bot_user_id: str | None) -> str | None:
    """The thread a message replies in, if any; None too for a mention of the bot (it is
    answered as the mention).

    >>> event = {"type": "message", "channel": "C1", "ts": "1.1", "thread_ts": "1.0"}
    >>> reply_thread(read_event({**event, "text": "and then?"}), "UBOT")
    '1.0'
    >>> reply_thread(read_event({**event, "text": "<@UBOT> and?"}), "UBOT")
    """
    thread_ts = event.thread_ts
    if not thread_ts or (bot_user_id and f"<@{bot_user_id}" in (event.text or "")):
        return None
    return thread_ts


def app_message_in_thread(
    body: Mapping[str, Any], bot_user_id: str | None, bot_id: str | None
) -> tuple[str, str, Mapping[str, Any]] | None:
    """``(channel, thread_ts, message)`` of a reply another app posted in a thread (an
    alert, a deploy bot): kept for the threads the bot follows. None for anything else: a
    person's message, the bot's own, an edit, a message outside a thread. Reads the event
    as Slack sent it (the message is kept as it is) and never raises.

    >>> event = {"type": "message", "subtype": "bot_message", "bot_id": "B2", "text": "down",
    ...          "channel": "C1", "ts": "2.0", "thread_ts": "1.0"}
    >>> app_message_in_thread({"event": event}, "UBOT", "B1")[:2]
    ('C1', '1.0')
    >>> app_message_in_thread({"event": {**event, "bot_id": "B1"}}, "UBOT", "B1") is None
    True
    """
    event = body.get("event")
    if not isinstance(event, Mapping) or event.get("type") != "message":
        return None
    if event.get("subtype") not in APP_SUBTYPES or not event.get("bot_id"):
        return None
    channel, thread_ts = event.get("channel"), event.get("thread_ts")
    if not isinstance(channel, str) or not isinstance(thread_ts, str):
        return None
    if thread_ts == event.get("ts") or event.get("bot_id") == bot_id:
        return None
    if bot_user_id is not None and event.get("user") == bot_user_id:
        return None
    return channel, thread_ts, event


APP_SUBTYPES = frozenset({None, "bot_message", "thread_broadcast"})
"""Subtypes of the messages apps post (kept in the transcripts of followed threads)."""


def mention_in_thread(event: MessageEvent) -> str | None:
    """The ``ts`` of a mention posted inside a thread (the thread's earlier messages up to it
    may give the question its context); None for a mention at the top level.

    >>> mention_in_thread(read_event({"type": "app_mention", "channel": "C1", "ts": "402.0",
    ...                               "thread_ts": "400.0"}))
    '402.0'
    """
    return event.ts if event.thread_ts else None


def command_question(command: SlashCommand) -> tuple[bool, str]:
    """``(private, question)`` of a slash command: ``/ask private how many?`` asks
    privately.

    >>> body = {"command": "/ask", "user_id": "U1", "channel_id": "C1"}
    >>> command_question(SlashCommand(**body, text="private how many?"))
    (True, 'how many?')
    >>> command_question(SlashCommand(**body, text="how private?"))
    (False, 'how private?')
    """
    text = (command.text or "").strip()
    first, _, rest = text.partition(" ")
    if first.lower() in PRIVATE_FLAGS:
        return True, rest.strip()
    return False, text


def _context(
    metadata: ChannelMetadata,
    *,
    enterprise_id: str | None,
    event_type: str | None = None,
    user_team: str | None = None,
    ext_shared: bool | None = None,
) -> RequestContext:
    """The context of ``metadata`` and the Slack extras (``slack_``-prefixed); keys without a
    value are left out."""
    merged: dict[str, object] = {
        **metadata,
        "slack_enterprise_id": enterprise_id,
        "slack_event_type": event_type,
        "slack_user_team": user_team,
        "slack_ext_shared": ext_shared,
    }
    return RequestContext(metadata={k: v for k, v in merged.items() if v is not None})


def event_context(callback: EventCallback, event: MessageEvent) -> RequestContext:
    """The ``RequestContext`` of an ``app_mention`` / ``message`` event callback.

    >>> read = read_delivery({"type": "event_callback", "team_id": "T1", "event": {
    ...     "type": "message", "channel_type": "im", "channel": "D1", "user": "U1",
    ...     "ts": "5.0"}})
    >>> ctx = event_context(read.delivery, read.event)
    >>> (ctx.metadata["thread_id"], ctx.metadata["is_dm"], ctx.metadata["workspace_id"])
    ('5.0', True, 'T1')
    """
    team, enterprise = workspace_of_delivery(callback, event)
    profile = event.user_profile
    name: Any = (profile.display_name or profile.real_name or None) if profile else None
    return _context(
        ChannelMetadata(
            platform=PLATFORM,
            workspace_id=team,
            user_id=event.user,  # type: ignore[typeddict-item]  # None: left out
            user_name=name,
            channel_id=event.channel,
            thread_id=event_thread_ts(event),
            is_dm=is_dm_event(event),
        ),
        enterprise_id=enterprise,
        event_type=event.type,
        user_team=event.user_team,
        ext_shared=callback.is_ext_shared_channel or None,
    )


def command_context(command: SlashCommand, *, thread_ts: str) -> RequestContext:
    """The ``RequestContext`` of a slash command answered in ``thread_ts``.

    >>> ctx = command_context(SlashCommand(team_id="T1", channel_id="C1", user_id="U1",
    ...     user_name="ana", command="/ask", text="hi"), thread_ts="9.0")
    >>> (ctx.metadata["command"], ctx.metadata["user_name"], ctx.metadata["is_dm"])
    ('/ask', 'ana', False)
    """
    team, enterprise = workspace_of_delivery(command)
    return _context(
        ChannelMetadata(
            platform=PLATFORM,
            workspace_id=team,
            user_id=command.user_id,
            user_name=command.user_name,  # type: ignore[typeddict-item]  # None: left out
            channel_id=command.channel_id,
            thread_id=thread_ts,
            # a command may come from anyone's DM (with a colleague, say): never "the bot's DM"
            is_dm=False,
            is_private=thread_ts == PRIVATE_THREAD,
            command=command.command,
        ),
        enterprise_id=enterprise,
    )


def _action_thread(body: Click) -> str:
    container, message = body.container, body.message
    thread = (container and container.thread_ts) or (message and message.thread_ts)
    if not thread:  # a private (ephemeral) answer outside a thread, or a top-level message
        thread = PRIVATE_THREAD if container and container.is_ephemeral else None
    return thread or (container and container.message_ts) or (message and message.ts) or ""


def action_context(clicked: Click) -> RequestContext:
    """The ``RequestContext`` of a ``block_actions`` payload (a button click).

    >>> ctx = action_context(read_delivery({"type": "block_actions", "team": {"id": "T1"},
    ...     "user": {"id": "U2", "username": "bo"}, "actions": [{"action_id": "a"}],
    ...     "channel": {"id": "C1"}, "container": {"channel_id": "C1", "message_ts": "7.0",
    ...     "thread_ts": "6.0"}}).delivery)
    >>> (ctx.metadata["user_id"], ctx.metadata["thread_id"])
    ('U2', '6.0')
    """
    team, enterprise = workspace_of_delivery(clicked)
    user, container = clicked.user, clicked.container
    channel = (clicked.channel and clicked.channel.id) or (container and container.channel_id)
    channel = channel or ""
    thread = _action_thread(clicked)
    ephemeral = bool(container and container.is_ephemeral)
    return _context(
        ChannelMetadata(
            platform=PLATFORM,
            workspace_id=team or user.team_id or "",
            user_id=user.id,
            user_name=user.username or user.name,  # type: ignore[typeddict-item]
            channel_id=channel,
            thread_id=thread,
            # only the bot posts non-ephemeral messages with buttons, so a D... channel
            # here is the bot's own DM
            is_dm=channel.startswith("D") and not ephemeral,
            # private only when the answer is (an ephemeral outside a thread); a click on
            # an ephemeral in a thread is answered in the thread, where everyone sees it
            is_private=thread == PRIVATE_THREAD,
        ),
        enterprise_id=enterprise,
        user_team=user.team_id,  # the clicker's own workspace (checked by the resolver)
    )


def assistant_thread_context(
    callback: EventCallback, event: AssistantThreadEvent
) -> RequestContext:
    """The ``RequestContext`` of ``assistant_thread_started``: a new thread in the bot's
    agent view (a DM with the bot).

    >>> read = read_delivery({"type": "event_callback", "team_id": "T1", "event": {
    ...     "type": "assistant_thread_started", "assistant_thread": {
    ...     "user_id": "U1", "channel_id": "D1", "thread_ts": "5.0"}}})
    >>> ctx = assistant_thread_context(read.delivery, read.event)
    >>> (ctx.metadata["channel_id"], ctx.metadata["thread_id"], ctx.metadata["is_dm"])
    ('D1', '5.0', True)
    """
    team, enterprise = workspace_of_delivery(callback)
    thread = event.assistant_thread
    return _context(
        ChannelMetadata(
            platform=PLATFORM,
            workspace_id=team,
            user_id=thread.user_id,
            channel_id=thread.channel_id,
            thread_id=thread.thread_ts,
            is_dm=True,
        ),
        enterprise_id=enterprise,
    )


HOME_THREAD = "home"
"""The thread id of the Messages tab's welcome (it is posted top-level, in no thread)."""


def home_context(callback: EventCallback, event: HomeEvent) -> RequestContext | None:
    """The ``RequestContext`` of ``app_home_opened`` on the Messages tab (the bot's DM);
    ``None`` for the other tabs.

    >>> read = read_delivery({"type": "event_callback", "team_id": "T1", "event": {
    ...     "type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"}})
    >>> ctx = home_context(read.delivery, read.event)
    >>> (ctx.metadata["user_id"], ctx.metadata["thread_id"], ctx.metadata["is_dm"])
    ('U1', 'home', True)
    """
    if event.tab != "messages" or not event.user or not event.channel:
        return None
    team, enterprise = workspace_of_delivery(callback)
    return _context(
        ChannelMetadata(
            platform=PLATFORM,
            workspace_id=team,
            user_id=event.user,
            channel_id=event.channel,
            thread_id=HOME_THREAD,
            is_dm=True,
        ),
        enterprise_id=enterprise,
    )


def conversation_id(context: RequestContext) -> str:
    """The agent's conversation id (the thread key) of a context built by this module."""
    meta = context.metadata
    return thread_key(meta["workspace_id"], meta["channel_id"], meta["thread_id"])


def asker_id(meta: ChannelMetadata) -> str:
    """Who asked (a context's ``metadata``), as the turn queue knows its owner (only they
    may stop the turn).

    >>> asker_id({"workspace_id": "T1", "user_id": "U1"})
    'T1:U1'
    """
    return f"{meta.get('workspace_id', '')}:{meta.get('user_id', '')}"


def turn_key(meta: ChannelMetadata, *, private: bool = False, opens_thread: bool = False) -> str:
    """The turn queue's ordering key of a context's ``metadata``: the conversation (a private
    one per asker; public slash commands, each opening a thread of its own, in order per
    asker and channel).

    Both channels order the turns of one conversation; Teams also splits it per asker
    (``adapters.teams.context.turn_key``), Slack cannot: a Slack thread has one status line
    (``assistant.threads.setStatus``) and one answer streams in it at a time, so two answers
    running at once in a thread would overwrite each other's progress.

    >>> meta = {"workspace_id": "T1", "channel_id": "C1", "thread_id": "1.0", "user_id": "U1"}
    >>> turn_key(meta), turn_key(meta, private=True), turn_key(meta, opens_thread=True)
    ('slack:T1:C1:1.0', 'slack:T1:C1:1.0:U1', 'slack:T1:C1:commands:U1')
    """
    if opens_thread:
        return f"slack:{meta['workspace_id']}:{meta['channel_id']}:commands:{meta['user_id']}"
    key = thread_key(meta["workspace_id"], meta["channel_id"], meta["thread_id"])
    return f"{key}:{meta['user_id']}" if private else key


@dataclass(frozen=True)
class ReplyTarget:
    """Where a turn answers: the thread, who asked, and how privately.

    ``private`` sends everything only to the asker (a private slash command); then
    ``response_url`` is the fallback when the bot is not in the channel.

    >>> ReplyTarget(channel="C1", thread_ts="1.0", team_id="T1", user_id="U1").is_dm
    False
    """

    channel: str
    thread_ts: str
    team_id: str
    user_id: str
    is_dm: bool = False
    private: bool = False
    response_url: str | None = None
    turn_id: str | None = None
    """The bot's turn this reply answers (named by the answer's feedback buttons)."""


def reply_target(
    context: RequestContext,
    *,
    thread_ts: str | None = None,
    private: bool = False,
    response_url: str | None = None,
    turn_id: str | None = None,
) -> ReplyTarget:
    """Where the answer to ``context`` goes: its thread (or ``thread_ts``); privately when
    ``private`` or when there is no thread (a slash command whose thread was never opened).

    >>> ctx = RequestContext(metadata={"workspace_id": "T1", "channel_id": "C1",
    ...                                "thread_id": "", "user_id": "U1"})
    >>> reply_target(ctx).private, reply_target(ctx, thread_ts="5.0").private
    (True, False)
    """
    meta = context.metadata
    thread = thread_ts or str(meta.get("thread_id") or "")
    return ReplyTarget(
        channel=str(meta["channel_id"]),
        thread_ts=thread or PRIVATE_THREAD,
        team_id=str(meta["workspace_id"]),
        user_id=str(meta["user_id"]),
        is_dm=bool(meta.get("is_dm")),
        private=private or not thread,
        response_url=response_url,
        turn_id=turn_id,
    )
