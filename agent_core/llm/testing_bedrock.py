"""A fake Amazon Bedrock runtime on 127.0.0.1: Claude's Messages API as Bedrock serves it.

Point the real ``AsyncAnthropicBedrock`` (or ``bedrock_service``) at ``fake.base_url``
(``ANTHROPIC_BEDROCK_BASE_URL``). What the fake holds the client to, as Bedrock does:

- ``POST /model/{model id or inference profile}/invoke`` answers the Messages JSON;
  ``.../invoke-with-response-stream`` streams it as AWS event-stream messages (binary
  frames with CRCs; each ``chunk`` carries one Messages event, base64 in ``bytes``);
- every request is SigV4-signed for service ``bedrock`` in the fake's ``region`` with one of
  its ``keys`` (the signature is recomputed and compared; an unknown key, a wrong region,
  a stale date or a bad signature gets Bedrock's 403), or carries ``Authorization: Bearer``
  with one of its ``api_keys`` (Bedrock API keys);
- the body is the Messages request without ``model`` and ``stream`` and with
  ``anthropic_version``; a missing ``anthropic_version`` is a ``ValidationException``;
- errors are Bedrock's: ``{"message": ...}`` with ``x-amzn-ErrorType`` (HTTP), or an
  ``exception`` frame (``throttlingException``...) in the middle of a stream.

The script is ``FakeAnthropic``'s (``Reply``, ``StatusError``, ``Hang``...); a
``StatusError``'s ``error_type`` is Bedrock's exception name (``ThrottlingException``).

>>> import asyncio
>>> from agent_core.llm.platforms import bedrock_service
>>> from agent_core.llm.base import LlmMessage, LlmRequest
>>> from agent_core.llm.testing import Reply
>>> from agent_core.users import User
>>> async def demo():
...     async with FakeBedrock() as fake:
...         fake.queue(Reply.text("Hel", "lo"))
...         async with bedrock_service(
...             model="us.anthropic.claude-test-v1:0", aws_region=fake.region,
...             aws_access_key=fake.key.access_key_id,
...             aws_secret_key=fake.key.secret_access_key, base_url=fake.base_url,
...         ) as llm:
...             hello = LlmRequest(messages=[LlmMessage(role="user", content="Hi")],
...                                user=User(id="u1"))
...             answer = await llm.send_request(hello)
...         return answer.content, fake.requests[0].path
>>> asyncio.run(demo())
('Hello', '/model/us.anthropic.claude-test-v1:0/invoke')
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from agent_core.llm import eventstream
from agent_core.llm.loopback import HttpRequest, HttpResponse
from agent_core.llm.sigv4 import AwsKey, SignatureError, verify
from agent_core.llm.testing import CHARS_PER_TOKEN, FakeAnthropic, RecordedRequest, StatusError

EVENT_STREAM = "application/vnd.amazon.eventstream"
_PATH = re.compile(
    r"^/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream|count-tokens)$"
)

_STATUS_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
"""Bedrock's exception name for an HTTP status, when a scripted error names none of its own."""

_STREAM_TYPES = {
    "overloaded_error": "serviceUnavailableException",
    "rate_limit_error": "throttlingException",
    "api_error": "internalServerException",
}
"""A scripted stream error's Anthropic type as Bedrock names it in an exception frame."""


class FakeBedrock(FakeAnthropic):
    """The fake Bedrock runtime; ``key`` (and ``keys``) sign, ``api_keys`` are bearer keys.

    ``clock`` is what "now" is when a signature's date is checked.
    """

    platform = "bedrock"
    stream_content_type = EVENT_STREAM

    def __init__(
        self,
        *,
        region: str = "us-east-1",
        key: AwsKey | None = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        super().__init__()
        self.region = region
        self.key = key or AwsKey("AKIAFAKEBEDROCK00001", "fake-secret-key-for-bedrock")
        self.keys: dict[str, AwsKey] = {self.key.access_key_id: self.key}
        self.api_keys: set[str] | None = set()
        self.clock = clock
        self.token_counts: list[RecordedRequest] = []

    def route(self, request: HttpRequest, body: dict[str, Any]) -> tuple[str, bool] | None:
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None or match["action"] == "count-tokens":
            return None
        return unquote(match["model"]), match["action"] == "invoke-with-response-stream"

    def model_refusal(self, model: str) -> StatusError:
        return StatusError(400, "ValidationException", "The provided model identifier is invalid.")

    async def special(self, request: HttpRequest, response: HttpResponse) -> bool:
        """``CountTokens`` (``POST /model/{id}/count-tokens``), signed like the rest."""
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None or match["action"] != "count-tokens":
            return False
        model = unquote(match["model"])
        if (refusal := self.authorize(request)) is not None:
            self.refused.append(RecordedRequest(request.path, dict(request.headers), {}))
        elif self.models is not None and model not in self.models:
            refusal = self.model_refusal(model)
        if refusal is not None:
            await self.send_error(response, refusal)
            return True
        body = json.loads(request.body or b"{}")
        invoke = json.loads(base64.b64decode(body["input"]["invokeModel"]["body"]))
        self.token_counts.append(RecordedRequest(request.path, dict(request.headers), invoke))
        counted = max(1, len(json.dumps(invoke.get("messages", []))) // CHARS_PER_TOKEN)
        answer = json.dumps({"inputTokens": counted}).encode()
        await response.send(200, {"Content-Type": "application/json"}, answer)
        return True

    def authorize(self, request: HttpRequest) -> StatusError | None:
        bearer = request.header("authorization")
        if bearer.startswith("Bearer "):
            if self.api_keys and bearer.removeprefix("Bearer ") in self.api_keys:
                return None
            return StatusError(403, "UnrecognizedClientException", "Invalid API Key format")
        try:
            verify(
                request.method,
                request.path,
                request.query,
                request.headers,
                request.body,
                keys=self.keys,
                region=self.region,
                service="bedrock",
                now=self.clock(),
            )
        except SignatureError as error:
            return StatusError(403, error.code, str(error))
        return None

    async def _answer(self, response: Any, entry: Any, body: dict[str, Any], *route: Any) -> None:
        if "anthropic_version" not in body or "model" in body:
            entry = StatusError(400, "ValidationException", "Malformed input request")
        await super()._answer(response, entry, body, *route)

    def frame(self, name: str, data: dict[str, Any]) -> bytes:
        chunk = {"bytes": base64.b64encode(json.dumps(data).encode()).decode()}
        headers = {
            ":event-type": "chunk",
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return eventstream.encode(headers, json.dumps(chunk).encode())

    def error_event(self, error_type: str, message: str) -> bytes:
        headers = {
            ":exception-type": _STREAM_TYPES.get(error_type, error_type),
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        return eventstream.encode(headers, json.dumps({"message": message}).encode())

    def error_body(self, entry: StatusError) -> tuple[dict[str, str], bytes]:
        kind = entry.error_type
        if not kind[:1].isupper():  # an Anthropic type: Bedrock's name for the status
            kind = _STATUS_TYPES.get(entry.status, "InternalServerException")
        headers = {
            "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        }
        return headers, json.dumps({"message": entry.message}).encode()
