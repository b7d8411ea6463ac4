"""The Slack side of the console: an in-process Slack Web API the real adapter talks to.

Each turn gets a real ``slack_sdk`` ``AsyncWebClient`` (its own token) pointed at
``/slack/api/`` of the console itself, and the Slack adapter's real ``ReplyStream`` drives it:
``chat.startStream``/``appendStream``/``stopStream`` for the answer,
``assistant.threads.setStatus`` for the status line, ``chat.postMessage``/``update``/``delete``
for blocks, ``chat.postEphemeral`` for admin-only detail in channels, file uploads for PNG
charts and CSVs. Every call becomes a ``slack`` event carrying the message as Slack would now
show it, so the page renders exactly the Block Kit the adapter produced.

Methods the console does not know answer ``unknown_method``, as Slack would, so the
adapter's own fallbacks are what the page shows.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bots.dev.events import TurnFeed

JSON_FIELDS = {"blocks", "attachments", "chunks", "files", "metadata", "loading_messages"}
BOT_USER_ID = "U0THREADLINE"
TEAM_ID = "T0CONSOLE"


@dataclass
class StoredFile:
    file_id: str
    name: str = "file"
    title: str | None = None
    content: bytes = b""

    @property
    def mimetype(self) -> str:
        if self.name.endswith(".png"):
            return "image/png"
        if self.name.endswith(".csv"):
            return "text/csv"
        return "text/plain"

    def public(self) -> dict[str, Any]:
        return {
            "id": self.file_id,
            "name": self.name,
            "title": self.title or self.name,
            "mimetype": self.mimetype,
            "size": len(self.content),
            "url": f"/slack/files/{self.file_id}/{self.name}",
        }


class FileStore:
    """Uploaded files, newest ``limit`` kept (a long console session stays small)."""

    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._files: OrderedDict[str, StoredFile] = OrderedDict()

    def add(self, stored: StoredFile) -> None:
        self._files[stored.file_id] = stored
        while len(self._files) > self.limit:
            self._files.popitem(last=False)

    def get(self, file_id: str) -> StoredFile | None:
        return self._files.get(file_id)


@dataclass
class SlackMessage:
    """A bot message as the thread shows it now."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    streaming: bool = False
    streamed: bool = False
    ephemeral_to: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)

    def snapshot(self, op: str, method: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "op": op,
            "method": method,
            "args": args,
            "message": {
                "ts": self.ts,
                "channel": self.channel,
                "thread_ts": self.thread_ts,
                "text": self.text,
                "blocks": self.blocks,
                "chunks": self.chunks,
                "streaming": self.streaming,
                "streamed": self.streamed,
                "ephemeral_to": self.ephemeral_to,
                "files": self.files,
            },
        }


class SlackSession:
    """One turn's view of the Slack API: its messages and the feed they are reported to."""

    def __init__(self, feed: TurnFeed) -> None:
        self.feed = feed
        self.messages: dict[str, SlackMessage] = {}
        self.calls: list[str] = []

    def report(self, op: str, message: SlackMessage, method: str, args: dict[str, Any]) -> None:
        self.feed.emit("slack", message.snapshot(op, method, _public_args(args)))


def _public_args(args: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments for the developer pane (file bytes and token left out)."""
    return {k: v for k, v in args.items() if k not in ("token", "content", "file")}


class SlackApi:
    """The console's Slack Web API; ``open(feed)`` returns a token whose calls report there.

    >>> api = SlackApi(FileStore())
    >>> api.open(TurnFeed()).startswith("xoxb-console-")
    True
    """

    def __init__(self, files: FileStore) -> None:
        self.files = files
        self._sessions: dict[str, SlackSession] = {}
        self._pending_uploads: dict[str, tuple[SlackSession, StoredFile]] = {}
        self._ts = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._epoch = int(time.time())

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/slack/api/{method}", self._api)
        app.router.add_post("/slack/upload/{file_id}", self._upload)
        app.router.add_get("/slack/files/{file_id}/{name}", self._file)

    def open(self, feed: TurnFeed) -> str:
        token = f"xoxb-console-{os.urandom(8).hex()}"
        self._sessions[token] = SlackSession(feed)
        return token

    def close(self, token: str) -> SlackSession | None:
        session = self._sessions.pop(token, None)
        if session is not None:
            stale = [k for k, (s, _) in self._pending_uploads.items() if s is session]
            for key in stale:
                del self._pending_uploads[key]
        return session

    def next_ts(self) -> str:
        return f"{self._epoch}.{next(self._ts):06d}"

    # --- HTTP -------------------------------------------------------------------------------

    @staticmethod
    async def _args(request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            body = await request.json()
            if isinstance(body, dict):
                args.update(body)
        else:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
        for key in JSON_FIELDS & args.keys():
            if isinstance(args[key], str) and args[key][:1] in "[{":
                args[key] = json.loads(args[key])
        return args

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._args(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        token = token or str(args.pop("token", ""))
        session = self._sessions.get(token)
        if session is None:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        session.calls.append(method)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        result: dict[str, Any] = await handler(session, args, request)
        return web.json_response({"ok": True, **result} if "ok" not in result else result)

    async def _upload(self, request: web.Request) -> web.Response:
        pending = self._pending_uploads.get(request.match_info["file_id"])
        if pending is None:
            return web.Response(status=404, text="unknown upload")
        _, stored = pending
        stored.content = await request.read()
        return web.Response(text="OK - 200")

    async def _file(self, request: web.Request) -> web.Response:
        stored = self.files.get(request.match_info["file_id"])
        if stored is None:
            raise web.HTTPNotFound()
        return web.Response(body=stored.content, content_type=stored.mimetype)

    # --- methods ----------------------------------------------------------------------------

    def _post(self, session: SlackSession, args: dict[str, Any], **extra: Any) -> SlackMessage:
        message = SlackMessage(
            channel=str(args.get("channel") or args.get("channel_id") or ""),
            ts=self.next_ts(),
            thread_ts=args.get("thread_ts"),
            text=args.get("text") or args.get("markdown_text") or "",
            blocks=args.get("blocks") or [],
            **extra,
        )
        session.messages[message.ts] = message
        return message

    async def _auth_test(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        return {"team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": "B0CONSOLE"}

    async def _chat_postMessage(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        if not (args.get("text") or args.get("blocks")):
            return {"ok": False, "error": "no_text"}
        message = self._post(session, args)
        session.report("post", message, "chat.postMessage", args)
        return {"channel": message.channel, "ts": message.ts, "message": {"ts": message.ts}}

    async def _chat_postEphemeral(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        message = self._post(session, args, ephemeral_to=str(args.get("user") or ""))
        session.report("ephemeral", message, "chat.postEphemeral", args)
        return {"message_ts": message.ts}

    async def _chat_update(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        message = session.messages.get(str(args.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message.text = args.get("text") or args.get("markdown_text") or message.text
        message.blocks = args.get("blocks") or message.blocks
        session.report("update", message, "chat.update", args)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_delete(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        message = session.messages.pop(str(args.get("ts")), None)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        session.report("delete", message, "chat.delete", args)
        return {"channel": message.channel, "ts": message.ts}

    @staticmethod
    def _append(message: SlackMessage, args: dict[str, Any]) -> None:
        text = args.get("markdown_text") or ""
        for chunk in args.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                text += chunk.get("text", "")
            else:
                message.chunks.append(chunk)
        message.text += text

    async def _chat_startStream(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        if not args.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        message = self._post(
            session, {**args, "text": "", "markdown_text": ""}, streaming=True, streamed=True
        )
        self._append(message, args)
        session.report("post", message, "chat.startStream", args)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_appendStream(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        message = session.messages.get(str(args.get("ts")))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append(message, args)
        session.report("update", message, "chat.appendStream", args)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_stopStream(self, session: SlackSession, args: dict[str, Any], _: Any) -> Any:
        message = session.messages.get(str(args.get("ts")))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append(message, args)
        message.blocks = args.get("blocks") or []
        message.streaming = False
        session.report("update", message, "chat.stopStream", args)
        return {"channel": message.channel, "ts": message.ts, "message": {"ts": message.ts}}

    async def _assistant_threads_setStatus(
        self, session: SlackSession, args: dict[str, Any], _: Any
    ) -> Any:
        session.feed.emit(
            "slack",
            {
                "op": "status",
                "method": "assistant.threads.setStatus",
                "args": _public_args(args),
                "status": args.get("status") or "",
            },
        )
        return {}

    async def _files_getUploadURLExternal(
        self, session: SlackSession, args: dict[str, Any], request: web.Request
    ) -> Any:
        file_id = f"F{next(self._file_ids):07d}"
        stored = StoredFile(file_id=file_id, name=str(args.get("filename") or "file"))
        self._pending_uploads[file_id] = (session, stored)
        host, port = request.transport.get_extra_info("sockname")[:2]  # type: ignore[union-attr]
        return {"file_id": file_id, "upload_url": f"http://{host}:{port}/slack/upload/{file_id}"}

    async def _files_completeUploadExternal(
        self, session: SlackSession, args: dict[str, Any], _: Any
    ) -> Any:
        shared = []
        for item in args.get("files") or []:
            pending = self._pending_uploads.pop(str(item.get("id")), None)
            if pending is None:
                return {"ok": False, "error": "file_not_found"}
            stored = pending[1]
            stored.title = item.get("title") or stored.name
            self.files.add(stored)
            shared.append(stored.public())
        if args.get("channel_id"):
            message = self._post(
                session,
                {
                    "channel": args["channel_id"],
                    "thread_ts": args.get("thread_ts"),
                    "text": args.get("initial_comment") or "",
                },
                files=shared,
            )
            session.report("post", message, "files.completeUploadExternal", args)
        return {"files": [{"id": f["id"], "title": f["title"]} for f in shared]}
