"""Earlier messages of a thread, for when the bot is first mentioned inside one.

``fetch_thread`` reads ``conversations.replies`` (bounded in count), ``thread_prompt`` keeps
the newest messages that fit a character budget, attributes each to its author and puts
them before the question, so "@bot what do you make of this?" has something to go on.

>>> print(thread_prompt([{"user": "U1", "text": "DB is slow"}], "why?", bot_user_id="UB"))
Earlier messages in this Slack thread, oldest first:
<@U1>: DB is slow
<BLANKLINE>
My question: why?
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.markdown import truncate

log = logging.getLogger(__name__)

MAX_MESSAGES = 30
MAX_CHARS = 6000
MAX_MESSAGE_CHARS = 1500


async def fetch_thread(
    client: AsyncWebClient,
    *,
    channel: str,
    thread_ts: str,
    before_ts: str,
    limit: int = MAX_MESSAGES,
) -> list[dict[str, Any]]:
    """The thread's messages before ``before_ts`` (at most ``limit``, newest kept)."""
    try:
        response = await client.conversations_replies(
            channel=channel, ts=thread_ts, limit=limit + 1, inclusive=True
        )
    except SlackApiError as error:
        log.info("slack: no thread history for context (%s)", error.response.get("error"))
        return []
    messages = [
        m for m in response.get("messages") or [] if float(m.get("ts", 0)) < float(before_ts)
    ]
    return messages[-limit:]


def _author(message: Mapping[str, Any], bot_user_id: str | None) -> str:
    user = message.get("user")
    if user is not None and user == bot_user_id:
        return "you (the assistant)"
    if user is None:
        return "a bot" if message.get("bot_id") else "someone"
    profile = message.get("user_profile") or {}
    name = profile.get("display_name") or profile.get("real_name")
    return f"<@{user}> ({name})" if name else f"<@{user}>"


def thread_prompt(
    messages: Sequence[Mapping[str, Any]],
    question: str,
    *,
    bot_user_id: str | None,
    max_chars: int = MAX_CHARS,
) -> str:
    """``question`` preceded by the thread's earlier messages that fit ``max_chars``."""
    lines: list[str] = []
    used = 0
    for message in reversed(messages):
        text = (message.get("text") or "").strip()
        if not text:
            continue
        line = f"{_author(message, bot_user_id)}: {truncate(text, MAX_MESSAGE_CHARS)}"
        if used + len(line) > max_chars:
            break
        lines.insert(0, line)
        used += len(line) + 1
    if not lines:
        return question
    history = "\n".join(lines)
    header = "Earlier messages in this Slack thread, oldest first:"
    return f"{header}\n{history}\n\nMy question: {question}"
