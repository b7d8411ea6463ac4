"""The one boundary where a failed Slack Web API call is read: ``SlackWebClient``.

``slack_sdk`` raises ``SlackApiError`` for any answer that is not ``{"ok": true}``, but what
it carries depends on the answer's body: Slack's own ``{"ok": false, "error": "..."}``, an
HTML or plain-text page from a proxy in front of Slack (a 502, a 503 during an incident), a
405 with no body, or a body that claims JSON and is not (then ``error.response`` is not even
a ``SlackResponse``). Reading ``error.response.get("error")`` breaks on all but the first.
So every call the adapters make goes through ``SlackWebClient`` (``web_client(client)``
turns any ``AsyncWebClient`` into one, keeping its token, URL and session), whose
``api_call`` translates each failure once, into ``SlackCallFailed`` carrying its
``SlackFailure``::

    SlackClientError (slack_sdk)              -> SlackCallFailed(failure: SlackFailure)
    ├── SlackApiError, JSON body              ->   code = Slack's error code
    ├── SlackApiError, any other body         ->   code = "http_503", "unreadable_response"
    └── SlackRequestError ...                 ->   code = the class name
    aiohttp.ClientError, TimeoutError         ->   code = "unreachable" (a transport fault)

The adapters catch ``SlackCallFailed`` (a ``agent_core.errors.PlatformCallFailed``) where
a call may fail without failing the turn; ``SLACK_FAILURES`` also names slack_sdk's and
aiohttp's own exceptions, for code that still calls a plain client.

>>> failure = slack_failure(SlackApiError("failed", {"ok": False, "error": "not_in_channel"}))
>>> failure.code, failure.server_fault
('not_in_channel', False)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from agent_core.errors import PlatformCallFailed

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
    retry_after: float | None = None
    """Seconds Slack asked to wait (a 429's ``Retry-After``)."""

    @property
    def server_fault(self) -> bool:
        """A failure on Slack's side (5xx, unreadable answer, unreachable, rate limited)."""
        return self.code in SERVER_CODES or (self.status is not None and self.status >= 500)

    def __str__(self) -> str:
        if self.code == f"http_{self.status}":
            return f"HTTP {self.status}"
        return self.code if self.status in (None, 200) else f"{self.code} (HTTP {self.status})"


class SlackCallFailed(PlatformCallFailed):
    """A Web API call failed; ``failure`` says how, whatever the answer's body was.

    >>> failed = SlackCallFailed(SlackFailure("not_in_channel", 200), "chat.postMessage")
    >>> str(failed), failed.failure.code
    ('chat.postMessage: not_in_channel', 'not_in_channel')
    """

    def __init__(self, failure: SlackFailure, method: str = "") -> None:
        super().__init__(f"{method}: {failure}" if method else str(failure))
        self.failure = failure


class SlackWebClient(AsyncWebClient):
    """slack_sdk's ``AsyncWebClient``, each failed call translated once into
    ``SlackCallFailed`` (see the module docstring).

    >>> web_client(AsyncWebClient(token="xoxb-1")).token
    'xoxb-1'
    """

    async def api_call(  # the same call, its failure translated
        self, api_method: str, **kwargs: Any
    ) -> AsyncSlackResponse:
        try:
            return await super().api_call(api_method, **kwargs)
        except (TimeoutError, SlackClientError, aiohttp.ClientError) as error:
            raise SlackCallFailed(slack_failure(error), api_method) from error

    async def files_upload_v2(self, **kwargs: Any) -> AsyncSlackResponse:
        try:  # its upload itself is a plain HTTP request, outside api_call
            return await super().files_upload_v2(**kwargs)
        except (TimeoutError, SlackClientError, aiohttp.ClientError) as error:
            raise SlackCallFailed(slack_failure(error), "files.uploadV2") from error


def web_client(client: AsyncWebClient) -> SlackWebClient:
    """``client`` as a ``SlackWebClient`` (itself, or one with its token, URL, session and
    retry handlers: bolt hands listeners a plain client per request)."""
    if isinstance(client, SlackWebClient):
        return client
    return SlackWebClient(
        token=client.token,
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        session=client.session,
        trust_env_in_session=client.trust_env_in_session,
        headers=dict(client.headers),
        team_id=client.default_params.get("team_id"),
        logger=client.logger,
        retry_handlers=client.retry_handlers,
    )


SLACK_FAILURES: tuple[type[BaseException], ...] = (
    SlackCallFailed,
    SlackClientError,
    aiohttp.ClientError,
    asyncio.TimeoutError,
)
"""What a Web API call may raise when Slack (or the way to it) fails: ``SlackCallFailed``
from a ``SlackWebClient``, slack_sdk's and aiohttp's own from a plain client."""


def slack_failure(error: BaseException) -> SlackFailure:
    """Read ``error`` (any of ``SLACK_FAILURES``, or anything else) without ever raising.

    >>> str(slack_failure(SlackApiError("failed", "<html>Bad gateway</html>")))
    'unreadable_response'
    >>> slack_failure(TimeoutError()).code
    'unreachable'
    """
    if isinstance(error, SlackCallFailed):
        return error.failure
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
    if isinstance(error, SlackCallFailed):
        return error.failure.retry_after
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
            return SlackFailure(code, status, "", retry_after(error))
    body = data if isinstance(data, str | bytes) else ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    code = f"http_{status}" if status not in (None, 200) else "unreadable_response"
    return SlackFailure(code, status, _short(body), retry_after(error))


def _status_of(response: object) -> int | None:
    for name in ("status_code", "status"):
        value = getattr(response, name, None)
        if isinstance(value, int):
            return value
    return None


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"
