"""The Slack side of the console: the shipped fake Slack Web API, and what the page shows.

The fake (``adapters.slack.testing``, the one the tests use) is mounted at ``/slack/`` of the
console. Each turn gets a real ``slack_sdk`` ``AsyncWebClient`` with a token of its own
pointed at ``/slack/api/``, and the Slack adapter's real ``ReplyStream`` drives it:
``chat.startStream``/``appendStream``/``stopStream`` for the answer,
``assistant.threads.setStatus`` for the status line, ``assistant.threads.setSuggestedPrompts``
for the questions Slack suggests above the composer, ``chat.postMessage``/``update``/``delete``
for blocks, ``chat.postEphemeral`` for admin-only detail in channels, file uploads for PNG
charts and CSVs. ``SlackView`` observes every call the fake answers and reports it to the
turn's feed as a ``slack`` event carrying the message as Slack would now show it, so the page
renders exactly the Block Kit the adapter produced. Uploaded files are served back at
``/slack/files/{id}/{name}``.

Calls Slack would refuse (an unknown method, a token no turn holds) are refused by the fake,
as Slack would, so the adapter's own fallbacks are what the page shows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from adapters.slack.testing import Call, FakeSlackApi, Message
from bots.dev.events import TurnFeed

BOT_USER_ID = "U0THREADLINE"
TEAM_ID = "T0CONSOLE"
KEEP = 500
"""Calls, messages and files the fake remembers (a long console session stays small)."""

MESSAGE_OPS = {
    "chat.postMessage": "post",
    "chat.startStream": "post",
    "files.completeUploadExternal": "post",
    "chat.postEphemeral": "ephemeral",
    "chat.update": "update",
    "chat.appendStream": "update",
    "chat.stopStream": "update",
    "chat.delete": "delete",
}


@dataclass
class SlackSession:
    """One turn's view of the Slack API: the feed its calls go to, its streamed messages."""

    feed: TurnFeed
    streamed: set[str] = field(default_factory=set)


def _public_args(args: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments for the developer pane (file bytes and token left out)."""
    return {k: v for k, v in args.items() if k not in ("token", "content", "file")}


def _prompts(value: Any) -> list[dict[str, str]]:
    """The prompts of a ``setSuggestedPrompts`` call (a JSON string when form-encoded)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if not isinstance(value, list):
        return []
    return [
        {"title": str(p.get("title", "")), "message": str(p.get("message", ""))}
        for p in value
        if isinstance(p, dict)
    ]


def _page_file(shared: dict[str, Any]) -> dict[str, Any]:
    """A shared file as the page links it (served by the fake, under the console's origin)."""
    keys = ("id", "name", "title", "mimetype", "size")
    return {**{k: shared[k] for k in keys}, "url": f"/slack/files/{shared['id']}/{shared['name']}"}


class SlackView:
    """The console's fake Slack Web API; ``open(feed)`` returns a token whose calls report
    there, ``close(token)`` revokes it.

    >>> view = SlackView()
    >>> token = view.open(TurnFeed())
    >>> token.startswith("xoxb-console-"), view.api.tokens == {token}
    (True, True)
    """

    def __init__(self) -> None:
        self.api = FakeSlackApi(
            team_id=TEAM_ID, bot_user_id=BOT_USER_ID, on_call=self._report, keep=KEEP
        )
        self._sessions: dict[str, SlackSession] = {}
        self._tokens: set[str] = set()
        self.api.tokens = self._tokens  # only the tokens of turns in flight are valid

    def mount(self, app: web.Application) -> None:
        app.add_subapp("/slack", self.api.web_app())

    def open(self, feed: TurnFeed) -> str:
        token = f"xoxb-console-{os.urandom(8).hex()}"
        self._sessions[token] = SlackSession(feed)
        self._tokens.add(token)
        return token

    def close(self, token: str) -> None:
        self._sessions.pop(token, None)
        self._tokens.discard(token)

    def _report(self, call: Call) -> None:
        session = self._sessions.get(call.token or "")
        if session is None or not (call.response or {}).get("ok"):
            return
        args = _public_args(call.args)
        if call.method == "assistant.threads.setStatus":
            status = call.args.get("status") or ""
            event = {"op": "status", "method": call.method, "args": args, "status": status}
            session.feed.emit("slack", event)
            return
        if call.method == "assistant.threads.setSuggestedPrompts":
            prompts = _prompts(call.args.get("prompts"))
            session.feed.emit(
                "slack",
                {
                    "op": "prompts",
                    "method": call.method,
                    "args": args,
                    "title": call.args.get("title"),
                    "prompts": prompts,
                },
            )
            return
        op = MESSAGE_OPS.get(call.method)
        if op is None or call.message is None:
            return
        if call.method == "chat.startStream":
            session.streamed.add(call.message.ts)
        message = self._snapshot(call.message, session)
        session.feed.emit(
            "slack", {"op": op, "method": call.method, "args": args, "message": message}
        )

    @staticmethod
    def _snapshot(message: Message, session: SlackSession) -> dict[str, Any]:
        """The message as the thread shows it now (copied: it changes with later calls)."""
        return {
            "ts": message.ts,
            "channel": message.channel,
            "thread_ts": message.thread_ts,
            "text": message.text,
            "blocks": list(message.blocks),
            "chunks": list(message.chunks),
            "streaming": message.streaming,
            "streamed": message.ts in session.streamed,
            "ephemeral_to": message.ephemeral_to,
            "files": [_page_file(shared) for shared in message.files],
        }
