"""A fake Microsoft Foundry endpoint on 127.0.0.1: Claude's Messages API as Foundry serves it.

Point the real ``AsyncAnthropicFoundry`` (or ``foundry_service``) at ``fake.base_url``
(``ANTHROPIC_FOUNDRY_BASE_URL``; a resource's URL is ``https://{resource}.services.ai.azure
.com/anthropic/``). What the fake holds the client to, as Foundry does:

- ``POST /anthropic/v1/messages``, the Messages API itself (JSON or SSE by ``stream``), with
  the deployment's model name in ``model``; ``POST /anthropic/v1/messages/count_tokens``
  counts input tokens;
- the resource's key in ``api-key`` / ``x-api-key`` (one of ``api_keys``), or a Microsoft
  Entra token in ``Authorization: Bearer`` (one of ``tokens``); anything else is 401 in
  Azure's words;
- errors inside the Messages API are Anthropic's (the script's ``StatusError``).

>>> import asyncio
>>> from agent_core.llm.platforms import foundry_service
>>> from agent_core.llm.base import LlmMessage, LlmRequest
>>> from agent_core.llm.testing import Reply
>>> from agent_core.users import User
>>> async def demo():
...     async with FakeFoundry() as fake:
...         fake.queue(Reply.text("Hel", "lo"))
...         async with foundry_service(
...             model="claude-test", api_key=fake.api_key, base_url=fake.base_url
...         ) as llm:
...             hello = LlmRequest(messages=[LlmMessage(role="user", content="Hi")],
...                                user=User(id="u1"))
...             answer = await llm.send_request(hello)
...         return answer.content, fake.requests[0].headers.get("api-key") == fake.api_key
>>> asyncio.run(demo())
('Hello', True)
"""

from __future__ import annotations

import json
from typing import Any

from agent_core.llm.loopback import HttpRequest, HttpResponse
from agent_core.llm.testing import CHARS_PER_TOKEN, FakeAnthropic, RecordedRequest, StatusError


class FakeFoundry(FakeAnthropic):
    """The fake Foundry resource; see the module docstring."""

    platform = "foundry"

    def __init__(
        self,
        *,
        api_key: str = "fake-foundry-resource-key",
        token: str = "eyJ0eXAi.fake-entra-token",
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.api_keys = {api_key}
        self.token = token
        self.tokens = {token}
        self.token_counts: list[RecordedRequest] = []

    @property
    def base_url(self) -> str:
        return f"{self._server.base_url}/anthropic/"

    @base_url.setter
    def base_url(self, value: str) -> None:
        return None  # follows the server's port

    def route(self, request: HttpRequest, body: dict[str, Any]) -> tuple[str, bool] | None:
        if (request.method, request.path) != ("POST", "/anthropic/v1/messages"):
            return None
        return str(body.get("model", "")), bool(body.get("stream"))

    def model_refusal(self, model: str) -> StatusError:
        return StatusError(
            404,
            "not_found_error",
            f"The API deployment {model!r} for this resource does not exist.",
        )

    def authorize(self, request: HttpRequest) -> StatusError | None:
        bearer = request.header("authorization")
        if bearer.startswith("Bearer ") and bearer.removeprefix("Bearer ") in self.tokens:
            return None
        key = request.header("api-key") or request.header("x-api-key")
        if key and key in (self.api_keys or ()):
            return None
        return StatusError(
            401,
            "authentication_error",
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
            "provide a valid key for an active subscription and use a correct regional API "
            "endpoint for your resource.",
        )

    async def special(self, request: HttpRequest, response: HttpResponse) -> bool:
        if (request.method, request.path) != ("POST", "/anthropic/v1/messages/count_tokens"):
            return False
        if (refusal := self.authorize(request)) is not None:
            await self.send_error(response, refusal)
            return True
        body = json.loads(request.body or b"{}")
        model = str(body.get("model", ""))
        if self.models is not None and model not in self.models:
            await self.send_error(response, self.model_refusal(model))
            return True
        self.token_counts.append(RecordedRequest(request.path, dict(request.headers), body))
        characters = len(json.dumps(body.get("messages", [])))
        counted = {"input_tokens": max(1, characters // CHARS_PER_TOKEN)}
        await response.send(200, {"Content-Type": "application/json"}, json.dumps(counted).encode())
        return True
