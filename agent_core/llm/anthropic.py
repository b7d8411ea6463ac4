"""``AnthropicLlmService``: Claude through the official ``anthropic`` SDK's async client.

Import this module only when you use it (``import agent_core`` never does): the SDK takes
about a second to import.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, TypeAlias

import anthropic
from anthropic.types.message_create_params import MessageCreateParamsBase

from agent_core.errors import LlmAuthenticationError, LlmTimeoutError
from agent_core.llm.anthropic_convert import (
    from_message,
    system_text,
    to_messages,
    to_tools,
    tool_problems,
    with_cache_breakpoints,
)
from agent_core.llm.anthropic_errors import translated_errors
from agent_core.llm.anthropic_stream import StreamAssembler
from agent_core.llm.base import LlmRequest, LlmResponse, LlmService, LlmStreamChunk
from agent_core.observability import ObservabilityProvider, Tracer
from agent_core.tool_contract import ToolSchema

DEFAULT_MODEL = "claude-sonnet-5-5"
"""Used when neither ``model=`` nor ``ANTHROPIC_MODEL`` names one."""

DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 120.0
"""Seconds to connect, and to wait for each piece of an answer (all of it, unstreamed)."""
DEFAULT_FIRST_BYTE_TIMEOUT = 15.0
"""Seconds a streamed answer may take to start: a hung API fails fast, then is retried."""

PlatformClient: TypeAlias = (
    anthropic.AsyncAnthropic | anthropic.AsyncAnthropicBedrock | anthropic.AsyncAnthropicVertex
)
"""An SDK client speaking the Messages API: Anthropic's own, Bedrock's, Vertex's (Foundry's
``AsyncAnthropicFoundry`` is an ``AsyncAnthropic``)."""


def sdk_timeout(timeout: float) -> anthropic.Timeout:
    """The SDK timeout for ``timeout`` seconds: connecting takes at most 10 of them."""
    return anthropic.Timeout(timeout, connect=min(timeout, 10.0))


class AnthropicLlmService(LlmService):
    """Talks to Claude with the SDK's ``AsyncAnthropic`` client, streaming text as it arrives.

    The model comes from ``model=`` or ``ANTHROPIC_MODEL``; the key from ``api_key=`` or
    ``ANTHROPIC_API_KEY``; the endpoint from ``base_url=`` or ``ANTHROPIC_BASE_URL``.
    ``max_tokens`` applies unless the request sets its own. The SDK's own retries are off
    (``max_retries=0``) because the agent's ``ErrorRecoveryStrategy`` decides (by default it
    retries 429, 529, 5xx, timeouts and dropped connections with jittered backoff, honouring
    ``retry-after``); every failure is raised as an ``agent_core.errors.LlmError``.
    ``timeout`` (seconds) bounds connecting and each wait for data, so a stalled stream fails
    instead of hanging; ``first_byte_timeout`` bounds how long a streamed answer may take to
    start, so an API that accepts the connection and then hangs fails in seconds, not
    minutes (an unstreamed answer arrives all at once: only ``timeout`` applies to it).

    ``LlmRequest.temperature`` is not sent unless ``send_temperature=True``: the API version
    this SDK speaks (2026-10-21) answers 400 to any sampling parameter. Turn it on only for
    gateways or pinned API versions that still accept it (pass their ``default_headers``).

    With an ``observability_provider``, token usage is recorded as the ``llm.tokens.input``
    and ``llm.tokens.output`` metrics (unit ``tokens``, tagged with the model).

    The same service talks to Claude on the cloud platforms: give it the platform's SDK
    client (``client=``) and its name (``provider=``, for error messages and telemetry), or
    build it with ``agent_core.llm.platforms`` (``bedrock_service``, ``vertex_service``,
    ``foundry_service``), which set the same timeouts and retries.

    >>> service = AnthropicLlmService(model="claude-sonnet-5-5", api_key="sk-ant-example")
    >>> service.model_name
    'claude-sonnet-5-5'
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = DEFAULT_TIMEOUT,
        first_byte_timeout: float = DEFAULT_FIRST_BYTE_TIMEOUT,
        max_retries: int = 0,
        send_temperature: bool = False,
        default_headers: dict[str, str] | None = None,
        observability_provider: ObservabilityProvider | None = None,
        client: PlatformClient | None = None,
        provider: str = "anthropic",
    ) -> None:
        if timeout <= 0 or first_byte_timeout <= 0:
            raise ValueError("timeout and first_byte_timeout must be positive (seconds)")
        self.model = model or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.first_byte_timeout = min(first_byte_timeout, timeout)
        self.send_temperature = send_temperature
        self.provider = provider
        self._tracer = Tracer(observability_provider)
        self._client: PlatformClient
        if client is not None:
            self._client, self._missing_credentials = client, False
            return
        with translated_errors():  # a broken credentials profile fails here
            first_party = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=base_url,
                timeout=sdk_timeout(timeout),
                max_retries=max_retries,
                default_headers=default_headers,
            )
        self._client = first_party
        self._missing_credentials = not _has_credentials(first_party, default_headers or {})

    @property
    def model_name(self) -> str:
        return self.model

    @property
    def client(self) -> PlatformClient:
        """The SDK client, for calls this service does not wrap."""
        return self._client

    async def send_request(self, request: LlmRequest) -> LlmResponse:
        """One complete answer (no streaming)."""
        self._check_credentials()
        with translated_errors(self.provider):
            message = await self._client.messages.create(
                **self._params(request), extra_body=self._extra_body(request)
            )
        response = from_message(message)
        await self._record_usage(response.usage)
        return response

    async def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]:
        """Text deltas as they arrive, each tool call once complete, then a final chunk with
        ``finish_reason`` (Anthropic's ``stop_reason``) and ``usage``."""
        self._check_credentials()
        assembler = StreamAssembler()
        with translated_errors(self.provider):
            stream = await self._open_stream(request)
            async with stream:
                async for event in stream:
                    if (chunk := assembler.feed(event)) is not None:
                        yield chunk
        if (chunk := assembler.close()) is not None:
            yield chunk
        await self._record_usage(assembler.usage)

    async def _open_stream(self, request: LlmRequest) -> Any:
        """The streamed response, once it starts (within ``first_byte_timeout``)."""
        try:
            async with asyncio.timeout(self.first_byte_timeout):
                return await self._client.messages.create(
                    **self._params(request), extra_body=self._extra_body(request), stream=True
                )
        except TimeoutError as error:
            raise LlmTimeoutError(
                f"The model did not start answering within {self.first_byte_timeout:g} s."
            ) from error

    async def validate_tools(self, tools: list[ToolSchema]) -> list[str]:
        """Names must match ``^[a-zA-Z0-9_-]{1,64}$`` and be unique; schemas must be objects."""
        return tool_problems(tools)

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self._client.close()

    async def __aenter__(self) -> AnthropicLlmService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _check_credentials(self) -> None:
        if self._missing_credentials:
            raise LlmAuthenticationError(
                "No Anthropic credentials: set ANTHROPIC_API_KEY or pass api_key="
            )

    def _params(self, request: LlmRequest) -> MessageCreateParamsBase:
        params: MessageCreateParamsBase = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": to_messages(request.messages),
        }
        if (system := system_text(request)) is not None:
            params["system"] = system
        if request.tools:
            params["tools"] = to_tools(request.tools)
        return with_cache_breakpoints(params)

    def _extra_body(self, request: LlmRequest) -> dict[str, Any] | None:
        return {"temperature": request.temperature} if self.send_temperature else None

    async def _record_usage(self, usage: dict[str, int] | None) -> None:
        if not usage:
            return
        tags = {"model": self.model, "provider": self.provider}
        await self._tracer.metric("llm.tokens.input", usage.get("input_tokens", 0), "tokens", tags)
        await self._tracer.metric(
            "llm.tokens.output", usage.get("output_tokens", 0), "tokens", tags
        )


def _has_credentials(client: anthropic.AsyncAnthropic, headers: dict[str, str]) -> bool:
    """Whether the SDK found a key, token or credential provider (else it fails every call
    with a ``TypeError``), or the caller sends its own auth header (a gateway)."""
    if client.api_key or client.auth_token or client.credentials is not None:
        return True
    return bool({"authorization", "x-api-key"} & {name.lower() for name in headers})
