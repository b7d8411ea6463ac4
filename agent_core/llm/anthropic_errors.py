"""The one place where ``anthropic`` SDK exceptions become ``agent_core.errors.LlmError``s.

Both calls of ``AnthropicLlmService`` run inside ``translated_errors()``; nothing else in
Threadline catches a vendor exception. HTTP status errors map by status code, errors sent
as an SSE ``error`` event in the middle of a 200 stream map by their ``error.type``, and a
stream that breaks (timeout, dropped connection, undecodable data) maps to the error the
agent's ``ErrorRecoveryStrategy`` can reason about::

    429 / rate_limit_error                  -> LlmRateLimitError (retry_after from headers)
    529 / overloaded_error                  -> LlmOverloadedError
    other 5xx / api_error / bad stream data -> LlmServerError
    408, APITimeoutError, read timeout      -> LlmTimeoutError
    APIConnectionError, transport error     -> LlmConnectionError
    401, 403, missing credentials           -> LlmAuthenticationError
    other 4xx                               -> LlmBadRequestError

The cloud platforms speak the same protocol with their own words, mapped the same way:
Bedrock's exception frames inside a stream (``throttlingException`` -> rate limit,
``serviceUnavailableException`` -> overloaded, ``modelStreamErrorException`` ->
server...), its ``{"message": ...}`` error bodies and Google's ``{"error": {"message"}}``
ones (the message is what the error says), and the platforms' credential libraries
(botocore, google-auth, azure-identity) failing to produce a credential -> authentication.
Each message names the platform (``provider``) that said it.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager

import anthropic
import httpx2

from agent_core.clock import SYSTEM_CLOCK
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

_BY_ERROR_TYPE: dict[str, type[LlmError]] = {
    "rate_limit_error": LlmRateLimitError,
    "overloaded_error": LlmOverloadedError,
    "api_error": LlmServerError,
    "timeout_error": LlmTimeoutError,
    "authentication_error": LlmAuthenticationError,
    "permission_error": LlmAuthenticationError,
    "billing_error": LlmAuthenticationError,
    "invalid_request_error": LlmBadRequestError,
    "not_found_error": LlmBadRequestError,
    "request_too_large": LlmBadRequestError,
    # Amazon Bedrock's exception frames inside an event stream
    "throttlingException": LlmRateLimitError,
    "serviceUnavailableException": LlmOverloadedError,
    "internalServerException": LlmServerError,
    "modelStreamErrorException": LlmServerError,
    "modelTimeoutException": LlmTimeoutError,
    "validationException": LlmBadRequestError,
    "accessDeniedException": LlmAuthenticationError,
}

PROVIDER_NAMES = {
    "anthropic": "Anthropic API",
    "bedrock": "Amazon Bedrock",
    "vertex": "Vertex AI",
    "foundry": "Microsoft Foundry",
}
"""How each provider is named in an error message."""

_CREDENTIAL_LIBRARIES = ("botocore", "google.auth", "azure.identity", "azure.core")


@contextmanager
def translated_errors(provider: str = "anthropic") -> Iterator[None]:
    """Re-raise SDK and transport exceptions as ``LlmError`` (``from`` the original).

    Exceptions it does not recognise (our own bugs) pass through unchanged.
    """
    try:
        yield
    except LlmError:
        raise
    except Exception as error:
        translated = translate_error(error, provider)
        if translated is None:
            raise
        raise translated from error


def translate_error(error: BaseException, provider: str = "anthropic") -> LlmError | None:
    """The ``LlmError`` for a vendor exception, or ``None`` when it is not one."""
    name = PROVIDER_NAMES.get(provider, provider)
    if isinstance(error, anthropic.APIStatusError):
        return _from_status_error(error, name)
    if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
        return LlmTimeoutError("The model took too long to answer.")
    if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
        return LlmConnectionError(f"Could not reach the model: {error}")
    if isinstance(error, anthropic.APIResponseValidationError | json.JSONDecodeError):
        return LlmServerError(f"The model's response could not be read: {error}")
    if isinstance(error, anthropic.CredentialsError):
        return LlmAuthenticationError(f"No usable {name} credentials: {error}")
    if type(error).__module__ == "botocore.eventstream":  # a Bedrock frame that does not hold
        return LlmServerError(f"The model's response could not be read: {error}")
    if type(error).__module__.startswith(_CREDENTIAL_LIBRARIES):
        return LlmAuthenticationError(f"No usable {name} credentials: {error}")
    return None


def _from_status_error(error: anthropic.APIStatusError, name: str) -> LlmError:
    status = error.status_code
    message = error.api_message or _plain_message(error.body) or error.message
    if status < 400:  # an ``error`` event inside a 200 stream: only its type tells what failed
        kind = _BY_ERROR_TYPE.get(error.type or "", LlmServerError)
        return kind(f"The model stream failed ({error.type}): {message}")
    kind = _by_status(status)
    retry_after = _retry_after(error.response.headers) if kind.retryable else None
    return kind(f"{name} error {status}: {message}", retry_after=retry_after)


def _plain_message(body: object) -> str | None:
    """Bedrock's error body: ``{"message": "..."}`` (its type is in a header)."""
    if isinstance(body, dict) and isinstance(message := body.get("message"), str):
        return message
    return None


def _by_status(status: int) -> type[LlmError]:
    if status == 429:
        return LlmRateLimitError
    if status == 529:
        return LlmOverloadedError
    if status >= 500:
        return LlmServerError
    if status == 408:
        return LlmTimeoutError
    if status in (401, 403):
        return LlmAuthenticationError
    return LlmBadRequestError


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if (millis := _number(headers.get("retry-after-ms"))) is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if (seconds := _number(value)) is not None:
        return seconds
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - SYSTEM_CLOCK.now())


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
