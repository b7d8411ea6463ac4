"""Every failure of the Messages API surfaces as one ``agent_core.errors.LlmError``."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agent_core.errors import (
    LlmAuthenticationError,
    LlmBadRequestError,
    LlmConnectionError,
    LlmError,
    LlmOverloadedError,
    LlmRateLimitError,
    LlmServerError,
    LlmTimeoutError,
)
from agent_core.extensions.recovery import BackoffRecoveryStrategy, RecoveryActionType
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.base import LlmRequest, LlmResponse
from agent_core.llm.testing import FakeAnthropic, RawStream, Reply, StatusError
from tests.llm.conftest import ServiceFactory
from tests.llm.support import UNCACHED, ask

Call = Callable[[AnthropicLlmService], Awaitable[object]]


async def send(service: AnthropicLlmService) -> object:
    return await service.send_request(ask())


async def stream(service: AnthropicLlmService) -> object:
    return [chunk async for chunk in service.stream_request(ask())]


both_calls = pytest.mark.parametrize("call", [send, stream], ids=["send", "stream"])


@both_calls
@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (529, "overloaded_error", LlmOverloadedError),
        (500, "api_error", LlmServerError),
        (503, "api_error", LlmServerError),
        (401, "authentication_error", LlmAuthenticationError),
        (403, "permission_error", LlmAuthenticationError),
        (400, "invalid_request_error", LlmBadRequestError),
        (404, "not_found_error", LlmBadRequestError),
        (413, "request_too_large", LlmBadRequestError),
        (422, "invalid_request_error", LlmBadRequestError),
        (408, "timeout_error", LlmTimeoutError),
    ],
)
async def test_status_errors_map_to_the_error_hierarchy(
    fake: FakeAnthropic,
    service: AnthropicLlmService,
    call: Call,
    status: int,
    error_type: str,
    expected: type[LlmError],
) -> None:
    fake.queue(StatusError(status, error_type, message="nope"))
    with pytest.raises(expected, match="nope") as caught:
        await call(service)
    assert type(caught.value) is expected
    assert len(fake.requests) == 1  # the SDK did not retry on its own


@both_calls
@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        ({"retry-after": "0.05"}, 0.05),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
async def test_rate_limit_carries_retry_after(
    fake: FakeAnthropic,
    service: AnthropicLlmService,
    call: Call,
    headers: dict[str, str],
    retry_after: float | None,
) -> None:
    fake.queue(StatusError(429, "rate_limit_error", headers=headers))
    with pytest.raises(LlmRateLimitError) as caught:
        await call(service)
    assert caught.value.retry_after == retry_after
    assert caught.value.retryable


async def test_retry_after_as_an_http_date(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        StatusError(
            429, "rate_limit_error", headers={"retry-after": "Fri, 31 Dec 2100 23:59:59 GMT"}
        )
    )
    with pytest.raises(LlmRateLimitError) as caught:
        await send(service)
    assert caught.value.retry_after is not None and caught.value.retry_after > 86_400


@pytest.mark.parametrize(
    ("error_type", "expected"),
    [
        ("overloaded_error", LlmOverloadedError),
        ("api_error", LlmServerError),
        ("rate_limit_error", LlmRateLimitError),
        ("invalid_request_error", LlmBadRequestError),
        ("something_new", LlmServerError),
    ],
)
async def test_an_error_event_mid_stream_maps_by_its_type(
    fake: FakeAnthropic,
    service: AnthropicLlmService,
    error_type: str,
    expected: type[LlmError],
) -> None:
    fake.queue(Reply.text("Hel", "lo", error_after=1, error_type=error_type))
    received: list[str | None] = []
    with pytest.raises(expected, match=error_type):
        async for chunk in service.stream_request(ask()):
            received.append(chunk.content)
    assert received == ["Hel"]


@pytest.mark.parametrize(
    "body",
    [
        b"event: content_block_delta\ndata: {not json\n\n",
        b"event: message_start\ndata: [1, 2\n\n",
        b"event: error\ndata: <html>Bad gateway</html>\n\n",
    ],
    ids=["bad-json", "truncated-json", "non-json-error"],
)
async def test_a_malformed_stream_is_a_server_error(
    fake: FakeAnthropic, service: AnthropicLlmService, body: bytes
) -> None:
    fake.queue(RawStream(body))
    with pytest.raises(LlmServerError):
        await stream(service)


async def test_a_stalled_stream_times_out(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    service = make_service(timeout=0.3)
    fake.queue(Reply.text("first", "never", hold_after=1, resume=asyncio.Event()))
    received: list[str | None] = []
    with pytest.raises(LlmTimeoutError):
        async for chunk in service.stream_request(ask()):
            received.append(chunk.content)
    assert received == ["first"]


async def test_an_unreachable_api_is_a_connection_error(make_service: ServiceFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    service = make_service(base_url=f"http://127.0.0.1:{port}")
    for call in (send, stream):
        with pytest.raises(LlmConnectionError):
            await call(service)


async def call_with_recovery(
    service: AnthropicLlmService, strategy: BackoffRecoveryStrategy, request: LlmRequest
) -> LlmResponse:
    """What the agent does with an ``ErrorRecoveryStrategy`` around an LLM call."""
    attempt = 1
    while True:
        try:
            return await service.send_request(request)
        except LlmError as error:
            action = await strategy.handle_llm_error(error, request, attempt)
            if action.action is not RecoveryActionType.RETRY:
                raise
            await asyncio.sleep((action.retry_delay_ms or 0) / 1000)
            attempt += 1


async def test_backoff_strategy_retries_a_429_after_retry_after(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        StatusError(429, "rate_limit_error", headers={"retry-after": "0.05"}), Reply.text("finally")
    )
    response = await call_with_recovery(service, BackoffRecoveryStrategy(), ask())
    assert response.content == "finally"
    first, second = fake.requests
    assert second.received_at - first.received_at >= 0.049  # retry-after: 0.05


async def test_backoff_strategy_does_not_retry_a_bad_request(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(StatusError(400, "invalid_request_error"), Reply.text("unused"))
    with pytest.raises(LlmBadRequestError):
        await call_with_recovery(service, BackoffRecoveryStrategy(), ask())
    assert len(fake.requests) == 1


async def test_sdk_retries_can_be_turned_back_on(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    service = make_service(max_retries=1)
    fake.queue(
        StatusError(529, "overloaded_error", headers={"retry-after-ms": "1"}), Reply.text("ok")
    )
    assert (await send(service)) == LlmResponse(
        content="ok",
        finish_reason="end_turn",
        usage={"input_tokens": 12, "output_tokens": 7, **UNCACHED},
    )
    assert len(fake.requests) == 2


async def test_missing_credentials_are_an_authentication_error(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Regression: with no key the SDK raised a bare ``TypeError`` on every call."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
        "ANTHROPIC_IDENTITY_TOKEN",
        "ANTHROPIC_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    async with AnthropicLlmService(base_url=fake.base_url) as service:
        for call in (send, stream):
            with pytest.raises(LlmAuthenticationError, match="ANTHROPIC_API_KEY"):
                await call(service)
    assert fake.requests == []


def test_a_broken_credentials_profile_fails_at_construction(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_PROFILE", "missing")
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    with pytest.raises(LlmAuthenticationError, match="credentials"):
        AnthropicLlmService()
