"""A fake Google Cloud Vertex AI endpoint on 127.0.0.1: Claude as Vertex serves it.

Point the real ``AsyncAnthropicVertex`` (or ``vertex_service``) at ``fake.base_url``
(``ANTHROPIC_VERTEX_BASE_URL``). What the fake holds the client to, as Vertex does:

- ``POST /projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
  answers the Messages JSON; ``:streamRawPredict`` streams the Messages SSE events;
  ``.../models/count-tokens:rawPredict`` counts input tokens (free: nothing is generated);
- the project and region in the path must be the fake's (else 403 / 404, as Google says);
- ``Authorization: Bearer`` must carry one of ``tokens`` (an OAuth access token: give the
  client ``access_token=`` or a google-auth credential holding it), else 401
  ``UNAUTHENTICATED``; ``POST /token`` is an OAuth token endpoint that trades one of
  ``refresh_tokens``, or a service account's signed JWT (``jwt-bearer`` grant, its RS256
  signature checked against ``service_accounts``' public keys) for ``token``, so
  application default credentials from a service-account key file whose ``token_uri``
  is the fake work end to end;
- the body is the Messages request without ``model`` and with ``anthropic_version``;
- errors are Google's: ``{"error": {"code", "message", "status"}}``.

>>> import asyncio
>>> from agent_core.llm.platforms import vertex_service
>>> from agent_core.llm.base import LlmMessage, LlmRequest
>>> from agent_core.llm.testing import Reply
>>> from agent_core.users import User
>>> async def demo():
...     async with FakeVertex() as fake:
...         fake.queue(Reply.text("Hel", "lo"))
...         async with vertex_service(
...             model="claude-test@20261001", project=fake.project, region=fake.region,
...             access_token=fake.token, base_url=fake.base_url,
...         ) as llm:
...             hello = LlmRequest(messages=[LlmMessage(role="user", content="Hi")],
...                                user=User(id="u1"))
...             answer = await llm.send_request(hello)
...         return answer.content, fake.requests[0].path.rpartition("/")[2]
>>> asyncio.run(demo())
('Hello', 'claude-test@20261001:rawPredict')
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, unquote

from agent_core.llm.loopback import HttpRequest, HttpResponse
from agent_core.llm.testing import CHARS_PER_TOKEN, FakeAnthropic, RecordedRequest, StatusError

_PATH = re.compile(
    r"^/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/"
    r"models/(?P<model>[^/:]+):(?P<action>rawPredict|streamRawPredict)$"
)

GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The audience of a service account's assertion, whichever endpoint it is sent to."""

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}


class FakeVertex(FakeAnthropic):
    """The fake Vertex AI endpoint; see the module docstring."""

    platform = "vertex"

    def __init__(
        self,
        *,
        project: str = "fake-project",
        region: str = "us-east5",
        token: str = "ya29.fake-vertex-token",
        refresh_token: str = "1//fake-refresh-token",
    ) -> None:
        super().__init__()
        self.project = project
        self.region = region
        self.token = token
        self.tokens = {token}
        self.refresh_tokens = {refresh_token}
        self.service_accounts: dict[str, bytes] = {}
        """Service-account key ids (``private_key_id``) and the public keys (PEM) the token
        endpoint checks their assertions with."""
        self.token_requests: list[dict[str, str]] = []
        self.token_counts: list[RecordedRequest] = []

    @property
    def token_uri(self) -> str:
        return f"{self.base_url}/token"

    def route(self, request: HttpRequest, body: dict[str, Any]) -> tuple[str, bool] | None:
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            return None
        if (match["project"], match["region"]) != (self.project, self.region):
            return None
        return unquote(match["model"]), match["action"] == "streamRawPredict"

    def model_refusal(self, model: str) -> StatusError:
        name = (
            f"projects/{self.project}/locations/{self.region}/publishers/anthropic/models/{model}"
        )
        return StatusError(
            404,
            "NOT_FOUND",
            f"Publisher Model `{name}` was not found or your project does not have access to it.",
        )

    def authorize(self, request: HttpRequest) -> StatusError | None:
        if request.path == "/token":
            return None
        token = request.header("authorization").removeprefix("Bearer ")
        if token not in self.tokens:
            return StatusError(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            )
        return None

    async def special(self, request: HttpRequest, response: HttpResponse) -> bool:
        if request.method == "POST" and request.path == "/token":
            await self._token(request, response)
            return True
        count = f"/projects/{self.project}/locations/{self.region}/publishers/anthropic/models/"
        if request.method == "POST" and request.path == count + "count-tokens:rawPredict":
            if (refusal := self.authorize(request)) is not None:
                await self.send_error(response, refusal)
                return True
            await self._count(request, response)
            return True
        return False

    async def _token(self, request: HttpRequest, response: HttpResponse) -> None:
        form = dict(parse_qsl(request.body.decode()))
        self.token_requests.append(form)
        if not self._grants(form):
            refused = {"error": "invalid_grant", "error_description": "Bad Request"}
            await response.send(
                400, {"Content-Type": "application/json"}, json.dumps(refused).encode()
            )
            return
        body: dict[str, Any] = {
            "access_token": self.token,
            "expires_in": 3599,
            "token_type": "Bearer",
        }
        await response.send(200, {"Content-Type": "application/json"}, json.dumps(body).encode())

    def _grants(self, form: dict[str, str]) -> bool:
        """Whether the token request proves an identity this fake trusts."""
        if form.get("grant_type") == "refresh_token":
            return form.get("refresh_token") in self.refresh_tokens
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return False
        from google.auth import exceptions, jwt  # the vertex extra: what signed it reads it

        decode: Any = jwt.decode  # google-auth ships no type hints
        try:
            claims = decode(
                form.get("assertion", ""),
                certs=self.service_accounts,
                audience=GOOGLE_TOKEN_AUDIENCE,
            )
        except (exceptions.GoogleAuthError, ValueError):
            return False
        return bool(claims.get("iss"))

    async def _count(self, request: HttpRequest, response: HttpResponse) -> None:
        body = json.loads(request.body or b"{}")
        model = str(body.get("model", ""))
        if self.models is not None and model not in self.models:
            return await self.send_error(response, self.model_refusal(model))
        self.token_counts.append(RecordedRequest(request.path, dict(request.headers), body))
        characters = len(json.dumps(body.get("messages", [])))
        counted = {"input_tokens": max(1, characters // CHARS_PER_TOKEN)}
        await response.send(200, {"Content-Type": "application/json"}, json.dumps(counted).encode())

    async def _answer(self, response: Any, entry: Any, body: dict[str, Any], *route: Any) -> None:
        if "anthropic_version" not in body or "model" in body:
            entry = StatusError(400, "INVALID_ARGUMENT", "anthropic_version is required")
        await super()._answer(response, entry, body, *route)

    def error_body(self, entry: StatusError) -> tuple[dict[str, str], bytes]:
        status = _GOOGLE_STATUS.get(entry.status, "UNKNOWN")
        error: dict[str, Any] = {"code": entry.status, "message": entry.message, "status": status}
        return {}, json.dumps({"error": error}).encode()
