"""``StatusLine``: the "<app> is working on it…" line under a thread, via
``assistant.threads.setStatus``.

Only changes are sent; Slack clears the status itself when the app replies, so the line is
cleared explicitly only when the turn ends without a reply since the last status. A
workspace or conversation where the method is refused (no ``assistant:write`` scope, not
an assistant thread) turns the line off for the turn after one log line.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SlackCallFailed, web_client

log = logging.getLogger(__name__)

LOADING_MESSAGES = ["Thinking…", "Looking into it…", "Putting the answer together…"]


def status_text(message: str) -> str:
    """Slack shows the status after the app's name: ``"<app> is working on it…"``.

    >>> status_text("Working on it...")
    'is working on it…'
    >>> status_text("is running run_sql")
    'is running run_sql'
    """
    message = message.strip().replace("...", "…")
    if not message or message.lower().startswith("is "):
        return message
    return f"is {message[0].lower()}{message[1:]}"


class StatusLine:
    """The status of one thread. ``await StatusLine(client, "C1", "1.0").set("Thinking")``"""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str) -> None:
        self._client = web_client(client)
        self._channel = channel
        self._thread_ts = thread_ts
        self._shown = ""
        self.enabled = True

    async def set(self, message: str) -> None:
        text = status_text(message)
        if not self.enabled or not text or text == self._shown:
            return
        await self._send(text)

    def replied(self) -> None:
        """The app posted in the thread, which clears the status on Slack's side."""
        self._shown = ""

    async def clear(self) -> None:
        if self.enabled and self._shown:
            await self._send("")

    async def _send(self, text: str) -> None:
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._channel,
                thread_ts=self._thread_ts,
                status=text,
                loading_messages=LOADING_MESSAGES if text else None,
            )
        except SlackCallFailed as error:
            self.enabled = False
            log.info("slack: status line off for this turn (%s)", error.failure)
            return
        self._shown = text
