"""The one place a failed Slack Web API call is read: ``slack_failure(error)``.

``slack_sdk`` raises ``SlackApiError`` for any answer that is not ``{"ok": true}``, but what
it carries depends on the answer's body: Slack's own ``{"ok": false, "error": "..."}``, an
HTML or plain-text page from a proxy in front of Slack (a 502, a 503 during an incident), a
405 with no body, or a body that claims JSON and is not (then ``error.response`` is not even
a ``SlackResponse``). Reading ``error.response.get("error")`` breaks on all but the first.
Every handler in ``adapters.slack`` and ``bots.slack`` reads errors through this module::

    SlackClientError (slack_sdk)              -> slack_failure(error): SlackFailure
    ├── SlackApiError, JSON body              ->   code = Slack's error code
    ├── SlackApiError, any other body         ->   code = "http_503", "unreadable_response"
    └── SlackRequestError ...                 ->   code = the class name
    aiohttp.ClientError, TimeoutError         ->   code = "unreachable" (a transport fault)

``SLACK_FAILURES`` is the tuple to catch where a call may fail without failing the turn.

>>> failure = slack_failure(SlackApiError("failed", {"ok": False, "error": "not_in_channel"}))
>>> failure.code, failure.server_fault
('not_in_channel', False)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

SLACK_FAILURES: tuple[type[BaseException], ...] = (
    SlackClientError,
    aiohttp.ClientError,
    asyncio.TimeoutError,
)
"""What a Web API call may raise when Slack (or the way to it) fails."""

SERVER_CODES = frozenset(
    {
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "unreachable",
        "unreadable_response",
        "ratelimited",
    }
)
"""Codes of failures on Slack's side (or on the way there): worth trying another way."""

MAX_DETAIL = 200


@dataclass(frozen=True, slots=True)
class SlackFailure:
    """What a failed call says, whatever its body was.

    ``code`` is Slack's error code when the body had one, else ``http_<status>`` or
    ``unreadable_response``; ``status`` the HTTP status when known; ``detail`` a short,
    single-line excerpt for logs (never the request, so never a token).

    >>> SlackFailure("http_503", 503, "<html>...").server_fault
    True
    """

    code: str
    status: int | None = None
    detail: str = ""

    @property
    def server_fault(self) -> bool:
        """A failure on Slack's side (5xx, unreadable answer, unreachable, rate limited)."""
        return self.code in SERVER_CODES or (self.status is not None and self.status >= 500)

    def __str__(self) -> str:
        if self.code == f"http_{self.status}":
            return f"HTTP {self.status}"
        return self.code if self.status in (None, 200) else f"{self.code} (HTTP {self.status})"


def slack_failure(error: BaseException) -> SlackFailure:
    """Read ``error`` (any of ``SLACK_FAILURES``, or anything else) without ever raising.

    >>> str(slack_failure(SlackApiError("failed", "<html>Bad gateway</html>")))
    'unreadable_response'
    >>> slack_failure(TimeoutError()).code
    'unreachable'
    """
    if isinstance(error, SlackApiError):
        return _api_failure(error)
    if isinstance(error, aiohttp.ClientError | asyncio.TimeoutError):
        return SlackFailure("unreachable", None, _short(f"{type(error).__name__}: {error}"))
    return SlackFailure(type(error).__name__, None, _short(str(error)))


def retry_after(error: BaseException) -> float | None:
    """Seconds Slack asked to wait (a 429's ``Retry-After``); None for any other failure.

    >>> retry_after(TimeoutError()) is None
    True
    """
    if not isinstance(error, SlackApiError) or _status_of(error.response) != 429:
        return None
    headers = getattr(error.response, "headers", None) or {}
    value = next((v for k, v in dict(headers).items() if str(k).lower() == "retry-after"), None)
    try:
        seconds = float(value) if value is not None else 60.0
    except (TypeError, ValueError):
        seconds = 60.0
    return seconds if 0 <= seconds < 24 * 3600 else 60.0


def error_code(error: BaseException) -> str:
    """Just the code: ``error_code(SlackApiError("x", {"error": "no_text"})) == "no_text"``"""
    return slack_failure(error).code


def _api_failure(error: SlackApiError) -> SlackFailure:
    response = error.response
    status = _status_of(response)
    data = getattr(response, "data", response)
    if isinstance(data, Mapping):
        code = data.get("error")
        if isinstance(code, str) and code:
            return SlackFailure(code, status, "")
    body = data if isinstance(data, str | bytes) else ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    code = f"http_{status}" if status not in (None, 200) else "unreadable_response"
    return SlackFailure(code, status, _short(body))


def _status_of(response: object) -> int | None:
    for name in ("status_code", "status"):
        value = getattr(response, name, None)
        if isinstance(value, int):
            return value
    return None


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"
