"""A fake Slack Web API for tests, benchmarks and the local console.

Point the real ``slack_sdk`` ``AsyncWebClient`` at ``fake.base_url``; every call is recorded
(``fake.calls``) and answered the way Slack answers: ``{"ok": true, ...}`` with generated
``ts`` values, or ``{"ok": false, "error": ...}``. Messages are kept per channel, so tests
can assert on what a person would see (``fake.thread(channel, ts)``); ``conversations.replies``
answers with them unless ``fake.replies`` scripts a thread.

>>> import asyncio
>>> from slack_sdk.web.async_client import AsyncWebClient
>>> async def demo():
...     async with FakeSlackApi() as fake:
...         client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
...         await client.chat_postMessage(channel="C1", text="hi")
...         return [c.method for c in fake.calls], fake.visible("C1")[0].text
>>> asyncio.run(demo())
(['chat.postMessage'], 'hi')

Scripting:
  ``fake.script("chat.appendStream", Reply(error="message_not_in_streaming_state"))``
  answers the next call(s) of a method from a queue; ``Reply(status=429, retry_after=1)``
  is a rate-limit answer; ``Reply.page(503)`` an HTML error page instead of JSON, as a
  proxy in front of Slack answers during an incident (``Reply.page(502, "text/plain")``,
  ``Reply.page(405, "")``: other bodies). ``fake.errors["usergroups.list"] =
  "missing_scope"`` fails a method until removed; ``fake.errors["users.info"] =
  Reply.page(503)`` too. People of another organisation: ``fake.users["UX"] = {"id": "UX",
  "team_id": "T9"}`` (on Grid add ``"enterprise_user": {"enterprise_id": "E1"}``); a Slack
  Connect channel: ``fake.channels["C2"] = {"is_ext_shared": True}`` (``conversations.info``).
  ``fake.tokens = {"xoxb-1"}`` makes every other token
  ``invalid_auth``, as a revoked token is.

Limits: ``FakeSlackApi(limits=NON_MARKETPLACE)`` (or ``fake.limits = ...``) enforces what
Slack enforces on apps not in the Marketplace since 2025: ``conversations.replies`` and
``conversations.history`` answer at most one request a minute per method and workspace
(then 429 with ``Retry-After``, recorded in ``fake.rate_limited``) and at most 15 messages a
request, whatever ``limit`` asked. ``HistoryLimits(window=...)`` and ``clock=`` make the
minute shorter or let a test move time on.

Watching: ``await fake.wait_for_call("chat.postMessage")`` (never sleep), or
``FakeSlackApi(on_call=...)``, called with each ``Call`` once it is answered
(``call.response``, and ``call.message`` as it now stands).

Token rotation: ``tokens = fake.issue_tokens("T1", lifetime=5)`` hands out an expiring
bot token (``xoxe.xoxb-...``) and its refresh token, as an install with token rotation does;
a call with that token after ``lifetime`` seconds (by ``clock``) answers ``token_expired``.
``oauth.v2.access`` with ``grant_type=refresh_token`` (and the app's ``client_id`` /
``client_secret``) trades a refresh token for a new pair, once: the same refresh token again
answers ``invalid_refresh_token``, as does one ``fake.revoke(...)`` named. New pairs live
``fake.token_lifetime`` seconds.

Enterprise Grid: ``fake.add_workspace("E1", "T1")`` makes T1 a workspace of organisation E1;
tokens from ``issue_tokens("E1")`` are then an org-wide install's (``auth.test`` names the
organisation, ``is_enterprise_install``).

Files people share: ``fake.share_file("sales.csv", data, user="U1")`` keeps the bytes and
returns the file object a message event carries; its ``url_private`` answers only with a
bot token (``Authorization: Bearer xoxb-...``), and otherwise with Slack's sign-in page
(HTML, status 200), as Slack does.

Serving: ``async with FakeSlackApi()`` listens on 127.0.0.1; ``fake.web_app()`` is the same
API as an aiohttp app to mount in your own (``app.add_subapp("/slack", fake.web_app())``:
then the Web API is ``/slack/api/``). ``keep=N`` remembers only the newest N calls,
messages and files, for a process that runs for hours.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import math
import mimetypes
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web
from yarl import URL

JSON_FIELDS = {
    "blocks",
    "attachments",
    "chunks",
    "files",
    "metadata",
    "prompts",
    "channels",
    "loading_messages",
    "outputs",
    "view",
}


@dataclass
class Call:
    """One request the fake received; ``response`` is the JSON it answered and ``message``
    the message the call posted or changed (set once the call is answered).

    >>> Call("chat.postMessage", {"channel": "C1", "text": "hi"}).method
    'chat.postMessage'
    """

    method: str
    args: dict[str, Any]
    token: str | None = None
    body: bytes = b""
    at: float = field(default_factory=time.monotonic)
    response: dict[str, Any] | None = None
    message: Message | None = None


@dataclass(frozen=True)
class HistoryLimits:
    """Slack's limits on reading conversations: ``requests`` per ``window`` seconds for each
    of ``methods`` and workspace, and at most ``max_messages`` messages a request.

    >>> NON_MARKETPLACE.requests, NON_MARKETPLACE.window, NON_MARKETPLACE.max_messages
    (1, 60.0, 15)
    """

    requests: int = 1
    window: float = 60.0
    max_messages: int = 15
    methods: frozenset[str] = frozenset({"conversations.replies", "conversations.history"})


NON_MARKETPLACE = HistoryLimits()
"""Apps distributed outside the Slack Marketplace, since 2025 (Marketplace apps: Tier 3)."""


@dataclass
class Reply:
    """A scripted answer: an error, a rate limit, extra fields merged into success, or a
    page that is not JSON at all (``body`` with its ``content_type``).

    >>> Reply(status=429, retry_after=1).status
    429
    >>> Reply.page(503).content_type, Reply.page(405, "").body
    ('text/html', '')
    """

    error: str | None = None
    status: int = 200
    retry_after: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None
    """Answer with this text instead of JSON (an error page)."""
    content_type: str = "application/json"

    @classmethod
    def page(cls, status: int, content_type: str = "text/html") -> Reply:
        """An error page as a load balancer or proxy serves it: HTML by default,
        ``"text/plain"`` for a one-line page, ``""`` for no body at all."""
        title = f"{status} {_REASONS.get(status, 'Error')}"
        body = {
            "text/html": f"<html><head><title>{title}</title></head>"
            f"<body><h1>{title}</h1></body></html>",
            "text/plain": title,
            "application/json": f"<html><body>{title}</body></html>",  # mislabelled
        }.get(content_type, "")
        return cls(status=status, body=body, content_type=content_type or "text/plain")


_REASONS = {
    405: "Method Not Allowed",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass(frozen=True)
class RotatingTokens:
    """An expiring bot token and the refresh token that replaces it (``issue_tokens``).

    >>> RotatingTokens("xoxe.xoxb-1", "xoxe-1", 43200, "T1").expires_in
    43200
    """

    access_token: str
    refresh_token: str
    expires_in: int
    workspace: str
    """The team id (or the enterprise id of an org-wide install) the tokens belong to."""


@dataclass
class Message:
    """A message as Slack would hold it; ``files`` are the file objects shared with it.

    >>> Message(channel="C1", ts="1.000100", thread_ts=None, text="hi").deleted
    False
    """

    channel: str
    ts: str
    thread_ts: str | None
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    user: str | None = None
    streaming: bool = False
    ephemeral_to: str | None = None
    deleted: bool = False
    chunks: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SlackFile:
    """A file uploaded with ``files.getUploadURLExternal`` (its bytes: ``fake.uploads``).

    >>> SlackFile("F1", "chart.png").mimetype
    'image/png'
    """

    id: str
    name: str = "file"
    title: str | None = None
    private: bool = False
    """Shared by a person: ``url_private`` asks for the bot token."""

    @property
    def mimetype(self) -> str:
        return mimetypes.guess_type(self.name)[0] or "application/octet-stream"


_request: ContextVar[web.Request] = ContextVar("fake_slack_request")
Handler = Callable[[Call], Awaitable[dict[str, Any]]]
Observer = Callable[[Call], None]


LOOKUPS = ("auth.test", "conversations.info")
"""Calls ``FakeSlackApi.methods()`` leaves out: the token's ``auth.test`` and the channel's
``conversations.info`` (is it shared with another organisation?), made once and cached."""


class FakeSlackApi:
    """The fake server; use as ``async with FakeSlackApi() as fake:`` (module docstring)."""

    def __init__(
        self,
        *,
        team_id: str = "T1",
        enterprise_id: str | None = None,
        bot_user_id: str = "UBOT",
        on_call: Observer | None = None,
        keep: int | None = None,
        limits: HistoryLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.team_id = team_id
        self.enterprise_id = enterprise_id
        """The Enterprise Grid organisation the workspace belongs to (``auth.test``)."""
        self.bot_user_id = bot_user_id
        self.on_call = on_call
        self.keep = keep
        self.calls: list[Call] = []
        self.messages: list[Message] = []
        self.users: dict[str, dict[str, Any]] = {}
        self.usergroups: list[dict[str, Any]] = []
        self.channels: dict[str, dict[str, Any]] = {}
        """``conversations.info`` answers: a channel not listed is an ordinary channel of the
        workspace (``{"id": ..., "is_ext_shared": False}``); set ``is_ext_shared`` /
        ``is_pending_ext_shared`` to make a Slack Connect one."""
        self.replies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.uploads: dict[str, bytes] = {}
        self.files: dict[str, SlackFile] = {}
        self.errors: dict[str, str | Reply] = {}
        self.tokens: set[str] | None = None
        self.steps: dict[str, dict[str, Any]] = {}
        """Workflow step runs ended (``functions.completeSuccess`` / ``completeError``), by
        ``function_execution_id``: ``{"outputs": ...}`` or ``{"error": ...}``; Slack refuses
        to end one twice (``execution_not_in_running_state``)."""
        self.views: dict[str, dict[str, Any]] = {}
        """The Home tab ``views.publish`` published last, by user id."""
        self.scopes: list[str] | None = None
        """The token's scopes, sent in ``X-OAuth-Scopes`` as Slack does (``None``: not sent)."""
        self.limits = limits
        """Slack's limits on reading conversations, enforced when set (``NON_MARKETPLACE``)."""
        self.rate_limited: list[Call] = []
        """The calls ``limits`` answered with 429."""
        self.clock = clock
        self.client_id, self.client_secret = "111.222", "shh"
        """The app's credentials ``oauth.v2.access`` checks."""
        self.token_lifetime = 43200
        """Seconds a refreshed bot token lives (Slack: 12 hours)."""
        self.expiring: dict[str, float] = {}
        """Each rotating access token and when (by ``clock``) it expires."""
        self.refresh_tokens: dict[str, str] = {}
        """Each refresh token still usable, and its workspace."""
        self.enterprises: dict[str, list[str]] = {}
        """Enterprise Grid organisations: id -> its workspaces (``add_workspace``)."""
        self._token_workspaces: dict[str, str] = {}
        self._token_ids = itertools.count(1)
        self._limited: dict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._ts = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._sockets: list[web.WebSocketResponse] = []
        self.port = 0

    # --- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def web_app(self) -> web.Application:
        """The fake's routes as an aiohttp app, to serve or to mount in another app."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload, name="upload")
        app.router.add_get("/files/{file_id}/{name}", self._file, name="file")
        app.router.add_post("/response/{hook}", self._response_url)
        app.router.add_get("/socket", self._socket, name="socket")
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.web_app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def close(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        """The Web API's URL, once ``start``ed (a mounted fake is where you mounted it)."""
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, hook: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/response/{hook}"

    # --- scripting and assertions -----------------------------------------------------------

    def script(self, method: str, *replies: Reply) -> None:
        self._scripts[method].extend(replies)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def methods(self, *, ignore: tuple[str, ...] = LOOKUPS) -> list[str]:
        """The methods called, in order, without the bot's lookups of who it is and
        whether a channel is shared (``LOOKUPS``): what a person could notice."""
        return [c.method for c in self.calls if c.method not in ignore]

    def visible(self, channel: str) -> list[Message]:
        return [m for m in self.messages if m.channel == channel and not m.deleted]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        return [m for m in self.visible(channel) if thread_ts in (m.thread_ts, m.ts)]

    async def wait_for(
        self, predicate: Callable[[FakeSlackApi], bool], *, timeout: float = 5.0
    ) -> None:
        """Wait until ``predicate(self)`` holds (re-checked after every call)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    async def wait_for_call(
        self, method: str, count: int = 1, *, timeout: float = 5.0
    ) -> list[Call]:
        await self.wait_for(lambda f: len(f.calls_to(method)) >= count, timeout=timeout)
        return self.calls_to(method)

    def issue_tokens(
        self, workspace: str | None = None, *, lifetime: int | None = None
    ) -> RotatingTokens:
        """A new expiring bot token and refresh token for ``workspace`` (default: this fake's
        team), as Slack hands them out to an app with token rotation."""
        n = next(self._token_ids)
        where = workspace or self.team_id
        expires_in = self.token_lifetime if lifetime is None else lifetime
        tokens = RotatingTokens(f"xoxe.xoxb-{where}-{n}", f"xoxe-1-{where}-{n}", expires_in, where)
        self.expiring[tokens.access_token] = self.clock() + expires_in
        self._token_workspaces[tokens.access_token] = where
        self.refresh_tokens[tokens.refresh_token] = where
        return tokens

    def add_workspace(self, enterprise_id: str, team_id: str) -> None:
        """A workspace of an Enterprise Grid organisation (tokens issued for the
        organisation, ``issue_tokens(enterprise_id)``, are an org-wide install's)."""
        self.enterprises.setdefault(enterprise_id, []).append(team_id)

    def revoke(self, refresh_token: str) -> None:
        """Refuse ``refresh_token`` from now on (an admin revoked it, or it leaked)."""
        self.refresh_tokens.pop(refresh_token, None)

    def refreshes(self) -> list[Call]:
        """The ``oauth.v2.access`` calls that traded a refresh token for a new pair."""
        return [
            c
            for c in self.calls_to("oauth.v2.access")
            if c.args.get("grant_type") == "refresh_token" and (c.response or {}).get("ok")
        ]

    # --- plumbing -----------------------------------------------------------------------------

    def next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._forget_old()
            self._changed.notify_all()

    def _observe(self, call: Call) -> None:
        if self.on_call is not None:
            self.on_call(call)

    def _forget_old(self) -> None:
        if self.keep is None:
            return
        for history in (self.calls, self.messages):
            del history[: max(0, len(history) - self.keep)]
        for store in (self.uploads, self.files):
            while len(store) > self.keep:
                del store[next(iter(store))]

    @staticmethod
    def _url(route: str, **parts: str) -> URL:
        """An absolute URL of this fake's ``route``, as the client of this request reached it
        (the fake may be mounted under a prefix in another app)."""
        request = _request.get()
        return request.url.origin().join(request.app.router[route].url_for(**parts))

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    @staticmethod
    async def _args(request: web.Request) -> tuple[dict[str, Any], bytes]:
        body = await request.read()
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json" and body:
            args.update(json.loads(body))
        elif body:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
        for key in JSON_FIELDS & args.keys():
            if isinstance(args[key], str) and args[key][:1] in "[{":
                args[key] = json.loads(args[key])
        return args, body

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args, body = await self._args(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") or args.pop("token", None)
        call = Call(method=method, args=args, token=token, body=body)
        await self._record(call)
        _request.set(request)  # for the URLs a method hands out (this request's task only)
        queue = self._scripts[call.method]
        scripted = queue.popleft() if queue else None
        if scripted is not None and scripted.delay:
            await asyncio.sleep(scripted.delay)
        failing = self.errors.get(call.method)
        page = scripted if scripted is not None and scripted.body is not None else failing
        if isinstance(page, Reply) and page.body is not None:
            await self._notify()
            self._observe(call)
            return web.Response(status=page.status, text=page.body, content_type=page.content_type)
        status, call.response, headers = await self._answer(call, scripted)
        if self.scopes is not None:
            headers = {**headers, "X-OAuth-Scopes": ",".join(self.scopes)}
        await self._notify()
        self._observe(call)
        return web.json_response(call.response, status=status, headers=headers)

    async def _answer(
        self, call: Call, scripted: Reply | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, JSON body and headers: scripted, failed as configured, or the method's."""
        if scripted is not None and scripted.status == 429:
            retry_after = 1 if scripted.retry_after is None else scripted.retry_after
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)}
        if (wait := self._over_limit(call)) is not None:
            self.rate_limited.append(call)
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)}
        if scripted is not None and scripted.error:
            return 200, {"ok": False, "error": scripted.error}, {}
        failing = self.errors.get(call.method)
        error = failing.error if isinstance(failing, Reply) else failing
        if call.method not in self.errors:
            error = self._refused(call)
        if error is not None:
            return 200, {"ok": False, "error": error}, {}
        handler: Handler | None = getattr(self, "_" + call.method.replace(".", "_"), None)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        result = await handler(call)
        if scripted is not None:
            result.update(scripted.data)
        return 200, {"ok": True, **result} if "ok" not in result else result, {}

    def _over_limit(self, call: Call) -> int | None:
        """Seconds to wait when ``limits`` refuse the call (per method and workspace, as
        Slack counts: the token stands for the workspace); None when it may go through."""
        limits = self.limits
        if limits is None or call.method not in limits.methods:
            return None
        now, recent = self.clock(), self._limited[(call.method, call.token or "")]
        while recent and recent[0] <= now - limits.window:
            recent.popleft()
        if len(recent) < limits.requests:
            recent.append(now)
            return None
        return max(1, math.ceil(recent[0] + limits.window - now))

    def _refused(self, call: Call) -> str | None:
        """Why Slack would refuse the call's token, if it would."""
        if call.method == "oauth.v2.access":
            return None  # the app's own credentials, checked by the method
        expires_at = self.expiring.get(call.token or "")
        if expires_at is not None and expires_at <= self.clock():
            return "token_expired"
        prefix = "xapp-" if call.method == "apps.connections.open" else "xox"
        if not call.token or not call.token.startswith(prefix):
            return "not_authed"
        if self.tokens is not None and call.token not in self.tokens:
            return "invalid_auth"
        return None

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        content = await request.read()
        self.uploads[file_id] = content
        call = Call(method="upload", args={"file_id": file_id}, body=content)
        await self._record(call)
        self._observe(call)
        return web.Response(text="OK - 200")

    async def _file(self, request: web.Request) -> web.Response:
        """A file's bytes, as its ``url_private`` serves them: a person's file only with a
        bot token (else the sign-in page), the bot's own uploads without one."""
        file_id = request.match_info["file_id"]
        content = self.uploads.get(file_id)
        if content is None:
            raise web.HTTPNotFound()
        stored = self.files.get(file_id, SlackFile(file_id, request.match_info["name"]))
        if stored.private:  # a person's file: the download is a call to assert on
            token = request.headers.get("Authorization", "").removeprefix("Bearer ")
            await self._record(Call(method="file", args={"file_id": file_id}, token=token))
            if not self._token_ok(token):
                return web.Response(
                    text="<html><body>Sign in to Slack</body></html>", content_type="text/html"
                )
        return web.Response(body=content, content_type=stored.mimetype)

    def _token_ok(self, token: str) -> bool:
        if not token.startswith("xox"):
            return False
        return self.tokens is None or token in self.tokens

    def share_file(
        self, name: str, content: bytes, *, user: str = "U1", size: int | None = None
    ) -> dict[str, Any]:
        """Keep a file a person shares; the file object its message event carries
        (``size``: what Slack announces, the real size unless given)."""
        file_id = f"F{next(self._file_ids)}"
        self.files[file_id] = SlackFile(file_id, name, private=True)
        self.uploads[file_id] = content
        url = URL(self.base_url).with_path(f"/files/{file_id}/{name}")
        return {
            "id": file_id,
            "name": name,
            "title": name,
            "user": user,
            "mimetype": self.files[file_id].mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(content) if size is None else size,
            "mode": "hosted",
            "url_private": str(url),
            "url_private_download": str(url),
        }

    async def _response_url(self, request: web.Request) -> web.Response:
        args, body = await self._args(request)
        hook = request.match_info["hook"]
        call = Call(method="response_url", args={"hook": hook, **args}, body=body)
        await self._record(call)
        self._observe(call)
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_json({"type": "hello", "num_connections": len(self._sockets)})
        await self._notify()
        async for message in socket:
            if message.type.name == "TEXT":
                call = Call(method="socket_ack", args=json.loads(message.data))
                await self._record(call)
                self._observe(call)
        return socket

    async def send_envelope(self, kind: str, payload: dict[str, Any], *, envelope_id: str) -> None:
        """Deliver a Socket Mode envelope (``events_api``, ``slash_commands``, ``interactive``)."""
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
            "retry_reason": "",
        }
        await self._sockets[-1].send_json(envelope)

    # --- methods ------------------------------------------------------------------------------

    async def _apps_connections_open(self, call: Call) -> dict[str, Any]:
        return {"url": str(self._url("socket").with_scheme("ws"))}

    def _find(self, call: Call) -> Message | None:
        """The message ``call`` names (``channel``, ``ts``); also its ``call.message``."""
        channel, ts = call.args["channel"], call.args["ts"]
        found = next((m for m in self.messages if m.channel == channel and m.ts == ts), None)
        call.message = found
        return found

    async def _auth_test(self, call: Call) -> dict[str, Any]:
        workspace = self._token_workspaces.get(call.token or "", self.team_id)
        if workspace in self.enterprises:  # an org-wide install's token: the organisation
            return {
                "url": "https://acme.enterprise.slack.com/",
                "team": "Acme Corp",
                "user": "threadline",
                "enterprise_id": workspace,
                "user_id": self.bot_user_id,
                "bot_id": "B1",
                "is_enterprise_install": True,
            }
        return {
            "url": "https://acme.slack.com/",
            "team": "Acme",
            "user": "threadline",
            "team_id": workspace,
            "user_id": self.bot_user_id,
            "bot_id": "B1",
            "is_enterprise_install": False,
            **({"enterprise_id": self.enterprise_id} if self.enterprise_id else {}),
        }

    def _post(self, call: Call, args: dict[str, Any], **extra: Any) -> Message:
        message = call.message = Message(
            channel=args["channel"],
            ts=self.next_ts(),
            thread_ts=args.get("thread_ts"),
            text=args.get("text") or args.get("markdown_text") or "",
            blocks=args.get("blocks") or [],
            user=self.bot_user_id,
            **extra,
        )
        self.messages.append(message)
        self._forget_old()
        return message

    async def _chat_postMessage(self, call: Call) -> dict[str, Any]:
        if not (call.args.get("text") or call.args.get("blocks") or call.args.get("markdown_text")):
            return {"ok": False, "error": "no_text"}
        message = self._post(call, call.args)
        return {"channel": message.channel, "ts": message.ts, "message": {"ts": message.ts}}

    async def _chat_postEphemeral(self, call: Call) -> dict[str, Any]:
        message = self._post(call, call.args, ephemeral_to=call.args["user"])
        return {"message_ts": message.ts}

    async def _chat_update(self, call: Call) -> dict[str, Any]:
        message = self._find(call)
        if message is None or message.deleted:
            return {"ok": False, "error": "message_not_found"}
        message.text = call.args.get("text") or call.args.get("markdown_text") or message.text
        message.blocks = call.args.get("blocks") or message.blocks
        if call.args.get("blocks"):
            message.chunks = []  # new blocks replace what was streamed (task cards too)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_delete(self, call: Call) -> dict[str, Any]:
        message = self._find(call)
        if message is None or message.deleted:
            return {"ok": False, "error": "message_not_found"}
        message.deleted = True
        return {"channel": message.channel, "ts": message.ts}

    def _append_chunks(self, message: Message, args: dict[str, Any]) -> None:
        text = args.get("markdown_text") or ""
        for chunk in args.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                text += chunk["text"]
            else:
                message.chunks.append(chunk)
        message.text += text

    async def _chat_startStream(self, call: Call) -> dict[str, Any]:
        if not call.args.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        args = {**call.args, "text": "", "markdown_text": ""}
        message = self._post(call, args, streaming=True)
        self._append_chunks(message, call.args)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_appendStream(self, call: Call) -> dict[str, Any]:
        message = self._find(call)
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append_chunks(message, call.args)
        return {"channel": message.channel, "ts": message.ts}

    async def _chat_stopStream(self, call: Call) -> dict[str, Any]:
        message = self._find(call)
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append_chunks(message, call.args)
        message.blocks = call.args.get("blocks") or []
        message.streaming = False
        return {"channel": message.channel, "ts": message.ts, "message": {"ts": message.ts}}

    async def _assistant_threads_setStatus(self, call: Call) -> dict[str, Any]:
        return {}

    async def _assistant_threads_setSuggestedPrompts(self, call: Call) -> dict[str, Any]:
        return {}

    async def _assistant_threads_setTitle(self, call: Call) -> dict[str, Any]:
        return {}

    async def _files_getUploadURLExternal(self, call: Call) -> dict[str, Any]:
        file_id = f"F{next(self._file_ids)}"
        self.files[file_id] = SlackFile(file_id, str(call.args.get("filename") or "file"))
        self._forget_old()
        upload_url = self._url("upload", file_id=file_id)
        return {"file_id": file_id, "upload_url": str(upload_url)}

    async def _files_completeUploadExternal(self, call: Call) -> dict[str, Any]:
        files = call.args.get("files") or []
        missing = [f["id"] for f in files if f["id"] not in self.uploads]
        if missing:
            return {"ok": False, "error": "file_not_found"}
        channel = call.args.get("channel_id")
        if channel:
            shared = [self._shared(f["id"], f.get("title")) for f in files]
            text = call.args.get("initial_comment") or ""
            args = {"channel": channel, "thread_ts": call.args.get("thread_ts"), "text": text}
            self._post(call, args, files=shared)
        return {"files": [{"id": f["id"], "title": f.get("title")} for f in files]}

    def _shared(self, file_id: str, title: str | None) -> dict[str, Any]:
        """The file object a message shows, once the file is shared with ``title``."""
        stored = self.files.setdefault(file_id, SlackFile(file_id))
        stored.title = title or stored.title
        return {
            "id": file_id,
            "name": stored.name,
            "title": stored.title or stored.name,
            "mimetype": stored.mimetype,
            "size": len(self.uploads[file_id]),
            "url_private": str(self._url("file", file_id=file_id, name=stored.name)),
        }

    async def _oauth_v2_access(self, call: Call) -> dict[str, Any]:
        """A refresh token traded for a new pair (``grant_type=refresh_token``), once."""
        basic = (call.token or "").removeprefix("Basic ")
        client_id, _, secret = base64.b64decode(basic or b"").decode().partition(":")
        client_id = call.args.get("client_id") or client_id
        secret = call.args.get("client_secret") or secret
        if client_id != self.client_id:
            return {"ok": False, "error": "invalid_client_id"}
        if secret != self.client_secret:
            return {"ok": False, "error": "bad_client_secret"}
        if call.args.get("grant_type") != "refresh_token":
            return {"ok": False, "error": "invalid_grant_type"}
        workspace = self.refresh_tokens.pop(str(call.args.get("refresh_token")), None)
        if workspace is None:
            return {"ok": False, "error": "invalid_refresh_token"}
        tokens = self.issue_tokens(workspace)
        return {
            "app_id": "A1",
            "token_type": "bot",
            "access_token": tokens.access_token,
            "refresh_token": tokens.refresh_token,
            "expires_in": tokens.expires_in,
            "bot_user_id": self.bot_user_id,
            "scope": ",".join(self.scopes or []),
            "team": {"id": workspace},
        }

    def _end_step(self, call: Call, outcome: dict[str, Any]) -> dict[str, Any]:
        execution = str(call.args.get("function_execution_id") or "")
        if not execution:
            return {"ok": False, "error": "invalid_arguments"}
        if execution in self.steps:
            return {"ok": False, "error": "execution_not_in_running_state"}
        self.steps[execution] = outcome
        return {}

    async def _functions_completeSuccess(self, call: Call) -> dict[str, Any]:
        outputs = call.args.get("outputs")
        if not isinstance(outputs, dict):
            return {"ok": False, "error": "parameter_validation_failed"}
        return self._end_step(call, {"outputs": outputs})

    async def _functions_completeError(self, call: Call) -> dict[str, Any]:
        error = call.args.get("error")
        if not isinstance(error, str) or not error:
            return {"ok": False, "error": "invalid_arguments"}
        return self._end_step(call, {"error": error})

    async def _views_publish(self, call: Call) -> dict[str, Any]:
        user, view = call.args.get("user_id"), call.args.get("view")
        if not isinstance(user, str) or not isinstance(view, dict) or view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments"}
        if len(view.get("blocks") or []) > 100:
            return {"ok": False, "error": "invalid_blocks"}
        self.views[user] = view
        return {"view": {"id": f"V{len(self.views)}", **view}}

    async def _users_info(self, call: Call) -> dict[str, Any]:
        user = self.users.get(call.args.get("user", ""))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"user": user}

    async def _conversations_info(self, call: Call) -> dict[str, Any]:
        channel = str(call.args.get("channel", ""))
        found = self.channels.get(channel, {"is_ext_shared": False})
        return {"channel": {"id": channel, "is_channel": True, **found}}

    async def _usergroups_list(self, call: Call) -> dict[str, Any]:
        include_users = str(call.args.get("include_users", "")).lower() in {"1", "true"}
        groups = [
            {k: v for k, v in g.items() if include_users or k != "users"} for g in self.usergroups
        ]
        return {"usergroups": groups}

    async def _usergroups_users_list(self, call: Call) -> dict[str, Any]:
        group = next((g for g in self.usergroups if g["id"] == call.args.get("usergroup")), None)
        if group is None:
            return {"ok": False, "error": "no_such_subteam"}
        return {"users": group.get("users", [])}

    def _read_limit(self, call: Call) -> int:
        limit = int(call.args.get("limit") or 1000)
        return limit if self.limits is None else min(limit, self.limits.max_messages)

    async def _conversations_history(self, call: Call) -> dict[str, Any]:
        """The channel's top-level messages, newest first."""
        channel = call.args.get("channel", "")
        messages = [
            {"type": "message", "ts": m.ts, "user": m.user, "text": m.text}
            for m in reversed(self.visible(channel))
            if m.thread_ts in (None, m.ts) and m.ephemeral_to is None
        ]
        limit = self._read_limit(call)
        return {"messages": messages[:limit], "has_more": len(messages) > limit}

    async def _conversations_replies(self, call: Call) -> dict[str, Any]:
        """``fake.replies[(channel, ts)]`` when set, else what was posted in the thread."""
        key = (call.args.get("channel", ""), call.args.get("ts", ""))
        messages = self.replies.get(key)
        if messages is None:
            messages = [
                {
                    "type": "message",
                    "ts": m.ts,
                    "thread_ts": m.thread_ts,
                    "user": m.user,
                    "text": m.text,
                }
                for m in self.thread(*key)
                if m.ephemeral_to is None
            ]
        if not messages:
            return {"ok": False, "error": "thread_not_found"}
        limit = self._read_limit(call)
        return {"messages": messages[:limit], "has_more": len(messages) > limit}


def function_executed(
    execution_id: str,
    inputs: dict[str, Any],
    *,
    team: str = "T1",
    callback_id: str = "ask_threadline",
    event_id: str | None = None,
) -> dict[str, Any]:
    """The ``event_callback`` Slack sends when a workflow runs an app's step (sign it with
    the app's signing secret, as every delivery).

    >>> function_executed("Fx1", {"question": "hi"})["event"]["function"]["callback_id"]
    'ask_threadline'
    """
    return {
        "token": "legacy",
        "team_id": team,
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id or f"Ev{execution_id}",
        "event_time": int(time.time()),
        "event": {
            "type": "function_executed",
            "function": {"id": "Fn1", "callback_id": callback_id, "title": "Ask Threadline"},
            "inputs": inputs,
            "function_execution_id": execution_id,
            "workflow_execution_id": f"Wf{execution_id}",
            "event_ts": str(time.time()),
            "bot_access_token": "xwfp-fake",
        },
    }


def message_shortcut(
    callback_id: str,
    *,
    user: str,
    channel: str,
    message: dict[str, Any],
    team: str = "T1",
    response_url: str = "",
) -> dict[str, Any]:
    """The interaction Slack sends when someone runs a message shortcut on ``message`` (a
    form field ``payload``, signed as every delivery).

    >>> message_shortcut("ask", user="U2", channel="C1", message={"ts": "1.0"})["type"]
    'message_action'
    """
    return {
        "type": "message_action",
        "callback_id": callback_id,
        "trigger_id": "trig",
        "action_ts": str(time.time()),
        "team": {"id": team, "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "team_id": team},
        "channel": {"id": channel, "name": "general"},
        "message": message,
        "message_ts": message.get("ts"),
        "response_url": response_url,
        "token": "legacy",
    }
