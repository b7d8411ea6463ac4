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
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anthropic
import httpx2

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
}


@contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raise SDK and transport exceptions as ``LlmError`` (``from`` the original).

    Exceptions it does not recognise (our own bugs) pass through unchanged.
    """
    try:
        yield
    except LlmError:
        raise
    except Exception as error:
        translated = translate_error(error)
        if translated is None:
            raise
        raise translated from error


def translate_error(error: BaseException) -> LlmError | None:
    """The ``LlmError`` for a vendor exception, or ``None`` when it is not one."""
    if isinstance(error, anthropic.APIStatusError):
        return _from_status_error(error)
    if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
        return LlmTimeoutError("The model took too long to answer.")
    if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
        return LlmConnectionError(f"Could not reach the model: {error}")
    if isinstance(error, anthropic.APIResponseValidationError | json.JSONDecodeError):
        return LlmServerError(f"The model's response could not be read: {error}")
    if isinstance(error, anthropic.CredentialsError):
        return LlmAuthenticationError(f"No usable Anthropic credentials: {error}")
    return None


def _from_status_error(error: anthropic.APIStatusError) -> LlmError:
    status = error.status_code
    message = error.api_message or error.message
    if status < 400:  # an ``error`` event inside a 200 stream: only its type tells what failed
        kind = _BY_ERROR_TYPE.get(error.type or "", LlmServerError)
        return kind(f"The model stream failed ({error.type}): {message}")
    kind = _by_status(status)
    retry_after = _retry_after(error.response.headers) if kind.retryable else None
    return kind(f"Anthropic API error {status}: {message}", retry_after=retry_after)


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
    return max(0.0, moment.timestamp() - time.time())


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
