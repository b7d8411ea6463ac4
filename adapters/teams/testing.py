"""A fake Bot Framework service for tests, benchmarks and the local console: the Connector
REST API Teams exposes at an activity's ``serviceUrl``, the OpenID metadata + JWKS that sign
inbound activities, and token endpoints for the bot's outbound calls.

Point the real clients at it: activities carry ``serviceUrl=connector.url``, the host reads
``TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL=connector.openid_metadata_url`` and
``TO_BOT_FROM_CHANNEL_TOKEN_ISSUER=connector.issuer``, and ``connector.sign(...)`` makes the
``Authorization`` header for an activity. Every call is recorded in ``connector.calls``; wait
for calls with ``await connector.wait_for(...)``, never with sleeps.

>>> import asyncio, aiohttp
>>> async def demo():
...     async with FakeBotConnector() as connector, aiohttp.ClientSession() as http:
...         url = connector.url + "v3/conversations/a:1/activities"
...         async with http.post(url, json={"type": "message", "text": "hi"}) as sent:
...             status = sent.status
...         call = await connector.wait_for(lambda c: c.operation == "send_to_conversation")
...         return status, call.text, call.response["id"]
>>> asyncio.run(demo())
(201, 'hi', '1700000000001')

It answers like Teams: new activity ids, ``201`` for streaming chunks with the stream's id, a
roster for ``get_conversation_member`` and, page by page (``pageSize``,
``continuationToken``; ``rosters``), ``get_conversation_paged_members``, new 1:1
conversations (kept in ``conversations``), and scripted failures (``connector.fail(...)``:
403, 429 with ``Retry-After``, 412, 502...).
It checks the streaming protocol as Teams does: sequence numbers must grow and each chunk
must extend the text streamed before it.

``FakeBotConnector(on_call=...)`` is called with each ``ConnectorCall`` once it is answered
(``call.status``, ``call.response``). ``connector.web_app()`` is the same service as an
aiohttp app to mount in your own (``app.add_subapp("/teams", connector.web_app())``: the
``serviceUrl`` is then ``.../teams/``). ``keep=N`` remembers only the newest N calls.

The Bot Framework token service (``OAUTH_URL=connector.url``) for single sign-on, enough
for botbuilder's own ``TokenApiClient``: ``GET /api/botsignin/GetSignInResource`` (the
sign-in link and ``tokenExchangeResource``), ``POST /api/usertoken/exchange`` (a Teams
token in ``user_tokens`` becomes its user token; ``exchange_fails`` refuses all) and
``GET /api/usertoken/GetToken`` (a sign-in page's ``magic_codes``, each once; without a
code, the token it keeps for the person: ``signed_in``).

Files a person sends the bot in a personal chat: ``connector.share_file("sales.csv", data)``
returns the ``file.download.info`` attachment Teams puts on the message; its ``downloadUrl``
is pre-authenticated (its secret is in the URL, as SharePoint's is) and each download is a
``download`` call.
Signing needs PyJWT and cryptography (imported on use; botbuilder already depends on both).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from aiohttp import web

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

DEFAULT_ISSUER = "https://api.botframework.test"


@cache
def rsa_key(name: str = "signing") -> rsa.RSAPrivateKey:
    """A 2048-bit RSA key per name, made once per test session."""
    from cryptography.hazmat.primitives.asymmetric import rsa  # only the signing parts need it

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class ConnectorCall:
    """One request the bot made to the fake connector; ``status`` and ``response`` (the JSON
    answered, if any) are set once it is answered.

    >>> ConnectorCall("reply_to_activity", "POST", "/v3/...", body={"type": "typing"}).activity_type
    'typing'
    """

    operation: str
    method: str
    path: str
    conversation_id: str | None = None
    activity_id: str | None = None
    body: Any = None
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    status: int = 0
    response: Any = None

    @property
    def activity_type(self) -> str | None:
        return self.body.get("type") if isinstance(self.body, dict) else None

    @property
    def stream_info(self) -> dict[str, Any] | None:
        """The ``streaminfo`` entity of a streaming activity, if any."""
        if not isinstance(self.body, dict):
            return None
        for entity in self.body.get("entities") or []:
            if isinstance(entity, dict) and entity.get("type") == "streaminfo":
                return entity
        return None

    @property
    def text(self) -> str | None:
        return self.body.get("text") if isinstance(self.body, dict) else None


class Answer(NamedTuple):
    """What the fake answers a call: status, JSON body (None: empty) and headers."""

    status: int
    body: Any = None
    headers: dict[str, str] | None = None


Observer = Callable[[ConnectorCall], None]


@dataclass
class ScriptedFailure:
    """An error ``FakeBotConnector.fail`` scripted for the next ``times`` matching calls."""

    operation: str
    status: int
    code: str
    message: str
    retry_after: float | None
    times: int
    when: Callable[[ConnectorCall], bool] | None


@dataclass
class _Stream:
    sequence: int = 0
    text: str = ""
    finished: bool = False


class FakeBotConnector:
    """The fake service; use as ``async with FakeBotConnector() as connector:`` (see the
    module docstring)."""

    def __init__(
        self,
        *,
        app_id: str = "00000000-0000-0000-0000-0000000000b0",
        issuer: str = DEFAULT_ISSUER,
        channel_id: str = "msteams",
        identity_header: str = "msi-secret",
        on_call: Observer | None = None,
        keep: int | None = None,
    ) -> None:
        self.app_id = app_id
        self.issuer = issuer
        self.channel_id = channel_id
        self.identity_header = identity_header
        self.on_call = on_call
        self.keep = keep
        self.kid = "fake-key-1"
        self.calls: list[ConnectorCall] = []
        self.token_requests: list[dict[str, Any]] = []
        self.openid_requests = 0
        self.members: dict[str, dict[str, Any]] = {}
        """The roster (``get_conversation_member``), by member id: Teams' fields as they
        are (``tenantId``, ``userRole``: ``user`` / ``guest`` / ``anonymous``...)."""
        self.rosters: dict[str, list[str]] = {}
        """Who is in a conversation (``get_conversation_paged_members``), by conversation id:
        ids of ``members``. A conversation not listed has every one of ``members``."""
        self.slow: dict[str, float] = {}
        """Seconds an operation takes before it answers (``{"get_conversation_member": 30}``:
        a roster that times out)."""
        self.conversations: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, bytes] = {}
        self.shared: dict[str, bytes] = {}
        """Files people sent the bot (``share_file``), by their download secret."""
        self.personal_conversations_allowed = True
        self.user_tokens: dict[str, str] = {}
        """The token service's exchanges: a Teams (SSO) token -> the user token it gives
        for it (``POST /api/usertoken/exchange``); any other token is refused (400)."""
        self.magic_codes: dict[str, str] = {}
        """The sign-in page's magic codes -> the user token ``GetToken`` gives for one."""
        self.exchange_fails = False
        """Refuse every exchange (the connection's Token Exchange URL is wrong, consent
        missing...), as the token service does: 400 with an error."""
        self.sso_resource = "api://bot.contoso.com/7a0f5b8e-1c2d-4e3f-9a8b-0c1d2e3f4a5b"
        """The ``tokenExchangeResource.uri`` ``GetSignInResource`` answers (the OAuth
        connection's Token Exchange URL)."""
        self.token_lifetime = 3600.0
        """Seconds the user tokens it gives are valid for (their ``expiration``)."""
        self.signed_in: dict[tuple[str, str], str] = {}
        """(user id, connection) -> the user token it keeps for them (``GetToken`` without a
        code answers it, as the real service refreshes one it keeps)."""
        self._failures: list[ScriptedFailure] = []
        self._streams: dict[str, _Stream] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ------------------------------------------------------------------ lifecycle

    def web_app(self) -> web.Application:
        """The fake's routes as an aiohttp app, to serve or to mount in another app."""
        app = web.Application()
        app.router.add_get("/openid/.well-known/openidconfiguration", self._openid_metadata)
        app.router.add_get("/openid/keys", self._jwks, name="jwks")
        app.router.add_post("/oauth2/v2.0/token", self._client_credentials_token)
        app.router.add_get("/msi/token", self._managed_identity_token)
        base = "/v3/conversations"
        app.router.add_post(base, self._create_conversation)
        app.router.add_post(base + "/{conversation}/activities", self._send)
        app.router.add_post(base + "/{conversation}/activities/{activity}", self._reply)
        app.router.add_put(base + "/{conversation}/activities/{activity}", self._update)
        app.router.add_delete(base + "/{conversation}/activities/{activity}", self._delete)
        app.router.add_get(base + "/{conversation}/members/{member}", self._member)
        app.router.add_get(base + "/{conversation}/pagedmembers", self._paged_members)
        app.router.add_get("/api/botsignin/GetSignInResource", self._sign_in_resource)
        app.router.add_post("/api/usertoken/exchange", self._exchange_token)
        app.router.add_get("/api/usertoken/GetToken", self._get_user_token)
        app.router.add_put("/upload/{name}", self._upload)
        app.router.add_get("/download/{secret}", self._download)
        return app

    async def start(self) -> Self:
        self._runner = web.AppRunner(self.web_app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """The ``serviceUrl`` to put in activities, once ``start``ed (a mounted fake is where
        you mounted it)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def openid_metadata_url(self) -> str:
        return f"{self.url}openid/.well-known/openidconfiguration"

    @property
    def managed_identity_endpoint(self) -> str:
        return f"{self.url}msi/token"

    # ------------------------------------------------------------------ tokens

    def sign(
        self,
        *,
        service_url: str | None = None,
        audience: str | None = None,
        issuer: str | None = None,
        expires_in: float = 3600,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """An ``Authorization`` header value for an inbound activity, signed like Bot
        Framework signs them; each argument can be set wrong on purpose."""
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": issuer or self.issuer,
            "aud": audience or self.app_id,
            "serviceurl": service_url or self.url,
            "nbf": now - 60,
            "iat": now - 60,
            "exp": int(now + expires_in),
        }
        payload.update(claims or {})
        import jwt

        token = jwt.encode(
            payload, key or rsa_key(), algorithm="RS256", headers={"kid": kid or self.kid}
        )
        return f"Bearer {token}"

    async def _openid_metadata(self, request: web.Request) -> web.Response:
        self.openid_requests += 1
        keys = request.url.origin().join(request.app.router["jwks"].url_for())
        base = str(keys).removesuffix("openid/keys")  # as the client reached this fake
        return web.json_response(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{base}oauth2/v2.0/authorize",
                "jwks_uri": str(keys),
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            }
        )

    async def _jwks(self, request: web.Request) -> web.Response:
        from jwt.algorithms import RSAAlgorithm

        jwk = RSAAlgorithm.to_jwk(rsa_key().public_key(), as_dict=True)
        jwk.update(kid=self.kid, use="sig", endorsements=[self.channel_id, "webchat"])
        return web.json_response({"keys": [jwk]})

    def _issue_token(self) -> str:
        import jwt

        return jwt.encode(
            {
                "aud": "https://api.botframework.com",
                "appid": self.app_id,
                "exp": int(time.time()) + 3600,
            },
            rsa_key("outbound"),
            algorithm="RS256",
        )

    async def _client_credentials_token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.token_requests.append({"kind": "client_credentials", **form})
        return web.json_response(
            {"token_type": "Bearer", "expires_in": 3600, "access_token": self._issue_token()}
        )

    async def _managed_identity_token(self, request: web.Request) -> web.Response:
        self.token_requests.append({"kind": "managed_identity", **request.query})
        if request.headers.get("X-IDENTITY-HEADER") != self.identity_header:
            return web.json_response({"statusCode": 401, "message": "bad header"}, status=401)
        return web.json_response(
            {
                "access_token": self._issue_token(),
                "expires_on": str(int(time.time()) + 3600),
                "resource": request.query.get("resource"),
                "token_type": "Bearer",
            }
        )

    # ------------------------------------------------------------------ scripting

    def fail(
        self,
        operation: str,
        status: int,
        *,
        code: str = "",
        message: str = "",
        retry_after: float | None = None,
        times: int = 1,
        when: Callable[[ConnectorCall], bool] | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``operation`` (that match ``when``) with an error.

        ``operation`` is a recorded operation name, or ``"stream"`` for streaming chunks
        (typing activities with a ``streaminfo`` entity of type ``streaming``).
        """
        self._failures.append(
            ScriptedFailure(
                operation,
                status,
                code or f"Http{status}",
                message or f"scripted {status}",
                retry_after,
                times,
                when,
            )
        )

    def _scripted(self, call: ConnectorCall) -> Answer | None:
        kinds = {call.operation}
        info = call.stream_info
        if info is not None:
            kinds.add(
                "stream"
                if info.get("streamType") == "streaming"
                else "stream_" + str(info.get("streamType"))
            )
        for failure in self._failures:
            if (
                failure.times
                and failure.operation in kinds
                and (failure.when is None or failure.when(call))
            ):
                failure.times -= 1
                headers = {}
                if failure.retry_after is not None:
                    headers["Retry-After"] = f"{failure.retry_after:g}"
                return _error(failure.status, failure.code, failure.message, headers)
        return None

    # ------------------------------------------------------------------ recording

    async def _record(self, request: web.Request, operation: str) -> ConnectorCall:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
        call = ConnectorCall(
            operation=operation,
            method=request.method,
            path=request.path,
            conversation_id=request.match_info.get("conversation"),
            activity_id=request.match_info.get("activity"),
            body=body,
            query=dict(request.query),
            headers=dict(request.headers),
        )
        return call

    async def _done(self, call: ConnectorCall, answer: Answer) -> web.Response:
        call.status, call.response = answer.status, answer.body
        async with self._changed:
            self.calls.append(call)
            if self.keep is not None:
                del self.calls[: max(0, len(self.calls) - self.keep)]
                for store in (self._streams, self.conversations, self.uploads):
                    while len(store) > self.keep:
                        del store[next(iter(store))]
            self._changed.notify_all()
        if self.on_call is not None:
            self.on_call(call)
        if answer.body is None:
            return web.Response(status=answer.status, headers=answer.headers)
        return web.json_response(answer.body, status=answer.status, headers=answer.headers)

    async def wait_for(
        self, predicate: Callable[[ConnectorCall], bool], *, count: int = 1, timeout: float = 5
    ) -> ConnectorCall:
        """Wait until ``count`` recorded calls match ``predicate``; return the last of them."""

        def matching() -> list[ConnectorCall]:
            return [c for c in self.calls if predicate(c)]

        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(matching()) >= count)
        return matching()[count - 1]

    def operations(self) -> list[str]:
        return [c.operation for c in self.calls]

    # ------------------------------------------------------------------ connector API

    def _new_id(self) -> str:
        return f"1700000{next(self._ids):06d}"

    def _stream_check(self, call: ConnectorCall) -> Answer | None:
        """Teams' streaming rules: growing sequence; each streaming chunk extends the text
        streamed before (informative updates are status lines and replace each other)."""
        info = call.stream_info
        if info is None:
            return None
        stream_id = info.get("streamId")
        kind = info.get("streamType")
        if stream_id is None:
            if kind != "informative" and kind != "streaming":
                return _error(400, "BadArgument", "final message without streamId")
            new_id = self._new_id()
            self._streams[new_id] = _Stream(
                sequence=int(info.get("streamSequence", 0)),
                text=(call.text or "") if kind == "streaming" else "",
            )
            return Answer(201, {"id": new_id})
        stream = self._streams.get(stream_id)
        if stream is None or stream.finished:
            return _error(
                400,
                "BadArgument",
                "Content stream is not allowed on a already completed streamed message",
            )
        if kind == "final":
            stream.finished = True
            return Answer(201, {"id": stream_id})
        sequence = int(info.get("streamSequence", 0))
        if sequence <= stream.sequence:
            return _error(
                412, "ContentStreamSequenceOrderPreConditionFailed", "stream sequence out of order"
            )
        stream.sequence = sequence
        if kind == "streaming":  # informative updates are status lines: they replace each other
            if not (call.text or "").startswith(stream.text):
                return _error(
                    403,
                    "ContentStreamNotAllowed",
                    "streaming content must include the content streamed before",
                )
            stream.text = call.text or ""
        return Answer(201, {"id": stream_id})

    async def _activity(self, request: web.Request, operation: str) -> web.Response:
        call = await self._record(request, operation)
        answer = self._scripted(call) or self._stream_check(call)
        return await self._done(call, answer or Answer(201, {"id": self._new_id()}))

    async def _send(self, request: web.Request) -> web.Response:
        return await self._activity(request, "send_to_conversation")

    async def _reply(self, request: web.Request) -> web.Response:
        return await self._activity(request, "reply_to_activity")

    async def _update(self, request: web.Request) -> web.Response:
        call = await self._record(request, "update_activity")
        return await self._done(call, self._scripted(call) or Answer(200, {"id": call.activity_id}))

    async def _delete(self, request: web.Request) -> web.Response:
        call = await self._record(request, "delete_activity")
        return await self._done(call, self._scripted(call) or Answer(200))

    async def _create_conversation(self, request: web.Request) -> web.Response:
        call = await self._record(request, "create_conversation")
        answer = self._scripted(call)
        if answer is None and not self.personal_conversations_allowed:
            answer = _error(403, "Forbidden", "The bot is not installed for this user")
        if answer is None:
            conversation_id = f"a:1personal-{uuid.uuid4().hex[:8]}"
            self.conversations[conversation_id] = call.body if isinstance(call.body, dict) else {}
            answer = Answer(201, {"id": conversation_id, "activityId": None})
        return await self._done(call, answer)

    def upload_info(self, name: str) -> dict[str, Any]:
        """What Teams sends in a ``fileConsent/invoke`` accept: where to upload, in the user's
        OneDrive (here: this fake)."""
        return {
            "name": name,
            "uploadUrl": f"{self.url}upload/{name}",
            "contentUrl": f"https://contoso-my.sharepoint.test/{name}",
            "uniqueId": uuid.uuid4().hex,
            "fileType": name.rsplit(".", 1)[-1],
        }

    async def _upload(self, request: web.Request) -> web.Response:
        content = await request.read()
        call = ConnectorCall(
            operation="upload",
            method="PUT",
            path=request.path,
            headers=dict(request.headers),
            body=len(content),
        )
        self.uploads[request.match_info["name"]] = content
        return await self._done(call, Answer(201, {"id": "drive-item"}))

    def share_file(self, name: str, content: bytes) -> dict[str, Any]:
        """Keep a file a person sends; the attachment its message activity carries."""
        secret = uuid.uuid4().hex
        self.shared[secret] = content
        return {
            "contentType": "application/vnd.microsoft.teams.file.download.info",
            "contentUrl": f"https://contoso-my.sharepoint.test/{name}",
            "name": name,
            "content": {
                "downloadUrl": f"{self.url}download/{secret}",
                "uniqueId": secret,
                "fileType": name.rsplit(".", 1)[-1],
            },
        }

    async def _download(self, request: web.Request) -> web.Response:
        content = self.shared.get(request.match_info["secret"])
        call = ConnectorCall(
            operation="download", method="GET", path=request.path, headers=dict(request.headers)
        )
        await self._done(call, Answer(200 if content is not None else 404))
        if content is None:
            raise web.HTTPNotFound()
        return web.Response(body=content, content_type="application/octet-stream")

    async def _member(self, request: web.Request) -> web.Response:
        call = await self._record(request, "get_conversation_member")
        if delay := self.slow.get(call.operation):
            await asyncio.sleep(delay)
        answer = self._scripted(call)
        if answer is None:
            member = self.members.get(request.match_info["member"])
            answer = (
                Answer(200, member)
                if member is not None
                else _error(404, "MemberNotFoundInConversation", "member not found")
            )
        return await self._done(call, answer)

    async def _paged_members(self, request: web.Request) -> web.Response:
        call = await self._record(request, "get_conversation_paged_members")
        if delay := self.slow.get(call.operation):
            await asyncio.sleep(delay)
        answer = self._scripted(call)
        if answer is None:
            ids = self.rosters.get(request.match_info["conversation"], list(self.members))
            size = max(1, int(request.query.get("pageSize") or 200))
            start = int(request.query.get("continuationToken") or 0)
            page: dict[str, Any] = {
                "members": [self.members[i] for i in ids[start : start + size] if i in self.members]
            }
            if start + size < len(ids):
                page["continuationToken"] = str(start + size)
            answer = Answer(200, page)
        return await self._done(call, answer)

    # ------------------------------------------------------------------ token service

    def _authorized(self, call: ConnectorCall) -> Answer | None:
        """The token service answers the bot's own credentials only."""
        if not call.headers.get("Authorization", "").startswith("Bearer "):
            return _error(401, "Unauthorized", "no bearer token")
        return None

    @staticmethod
    def _account(call: ConnectorCall) -> tuple[str, str]:
        return call.query.get("userId", ""), call.query.get("connectionName", "")

    def _user_token(self, call: ConnectorCall, token: str) -> Answer:
        expiration = time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self.token_lifetime)
        )
        return Answer(
            200,
            {
                "channelId": call.query.get("channelId", self.channel_id),
                "connectionName": call.query.get("connectionName", ""),
                "token": token,
                "expiration": expiration,
            },
        )

    async def _sign_in_resource(self, request: web.Request) -> web.Response:
        call = await self._record(request, "get_sign_in_resource")
        answer = self._authorized(call) or self._scripted(call)
        if answer is None:
            state = call.query.get("state", "")
            answer = Answer(
                200,
                {
                    "signInLink": f"{self.url}api/oauth/signin?signin={uuid.uuid4().hex}",
                    "tokenExchangeResource": {
                        "id": uuid.uuid4().hex,
                        "uri": self.sso_resource,
                        "providerId": "entra" if state else None,
                    },
                },
            )
        return await self._done(call, answer)

    async def _exchange_token(self, request: web.Request) -> web.Response:
        call = await self._record(request, "exchange_token")
        answer = self._authorized(call) or self._scripted(call)
        if answer is None:
            token = (call.body or {}).get("token") if isinstance(call.body, dict) else None
            issued = self.user_tokens.get(str(token)) if not self.exchange_fails else None
            answer = (
                self._user_token(call, issued)
                if issued is not None
                else _error(400, "TokenExchangeFailed", "the token could not be exchanged")
            )
            if issued is not None:
                self.signed_in[self._account(call)] = issued
        return await self._done(call, answer)

    async def _get_user_token(self, request: web.Request) -> web.Response:
        call = await self._record(request, "get_user_token")
        answer = self._authorized(call) or self._scripted(call)
        if answer is None:
            code = call.query.get("code")
            issued = self.magic_codes.pop(code, None) if code else None
            if issued is not None:
                self.signed_in[self._account(call)] = issued
            elif not code:
                issued = self.signed_in.get(self._account(call))
            answer = self._user_token(call, issued) if issued else Answer(404, None)
        return await self._done(call, answer)


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"error": {"code": code, "message": message}}, headers)


def message_action_value(
    message_id: str,
    html: str,
    *,
    author: str,
    author_name: str = "",
    question: str | None = None,
    reply_to: str | None = None,
    command_id: str = "askAboutMessage",
) -> dict[str, Any]:
    """The ``value`` of the ``composeExtension/submitAction`` invoke Teams sends when someone
    runs a message action on a message (send it as an invoke, authenticated as the rest).

    >>> message_action_value("17", "<p>hi</p>", author="aad-bo")["commandContext"]
    'message'
    """
    payload: dict[str, Any] = {
        "id": message_id,
        "messageType": "message",
        "body": {"contentType": "html", "content": html},
        "from": {"user": {"id": author, "displayName": author_name, "userIdentityType": "aadUser"}},
        "attachments": [],
        "mentions": [],
    }
    if reply_to is not None:
        payload["replyToId"] = reply_to
    return {
        "commandId": command_id,
        "commandContext": "message",
        "context": {"theme": "default"},
        "data": {"question": question} if question is not None else {},
        "messagePayload": payload,
    }
