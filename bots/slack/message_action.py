"""The message shortcut "Ask Threadline about this" in the Slack bot: a turn asked by whoever
ran it, about the message they pointed at, answered in that message's thread.

    message_action (signed) -> SlackAsked: the asker's context in the message's thread, the
                               message quoted as data (``adapters.slack.message_action``),
                               its files as shared files (only the asker's own are read),
                               and, for a reply in a thread, what the thread said before
                               it (within Slack's limits, as for a mention there)
                            -> accepted before the ack, joining the thread (follow-ups there
                               are answered like any thread the bot takes part in)

The message's author is never the asker: the turn runs with the asker's identity, groups,
data roles and budget, whoever wrote the message.
"""

from __future__ import annotations

from adapters.slack.message_action import (
    MessageAction,
    action_context,
    action_question,
    message_files,
)
from bots.slack.kinds import SlackAsked


def asked_about(
    action: MessageAction, *, enterprise_install: bool = False, bot_user_id: str | None = None
) -> SlackAsked:
    """The turn a message shortcut asks.

    >>> from adapters.slack.message_action import read_message_action
    >>> turn = asked_about(read_message_action({"type": "message_action",
    ...     "callback_id": "ask_about_message", "team": {"id": "T1"}, "user": {"id": "U1"},
    ...     "channel": {"id": "C1"}, "message": {"ts": "5.0", "user": "U2", "text": "hi"}}))
    >>> turn.owner, turn.turn_key
    ('T1:U1', 'slack:T1:C1:5.0')
    """
    return SlackAsked(
        context=action_context(action).metadata,
        text=action_question(action),
        files=message_files(action),
        enterprise_install=enterprise_install,
        bot_user_id=bot_user_id,
        message_ts=in_thread(action),
    )


def in_thread(action: MessageAction) -> str | None:
    """The message's ``ts`` when it is a reply in a thread (what the thread said before it is
    read, within Slack's limits, as for a mention there); None for a thread's parent."""
    message = action.message
    return message.ts if message.thread_ts and message.thread_ts != message.ts else None


def dedupe_key(action: MessageAction) -> str | None:
    """One turn per shortcut run (Slack's ``trigger_id``), whatever redelivers it."""
    return f"slack:shortcut:{action.trigger_id}" if action.trigger_id else None
