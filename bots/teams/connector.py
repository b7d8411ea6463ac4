"""The Bot Connector REST API over one shared aiohttp session: the host's ``TeamsConnector``.

botbuilder decides *who* the bot is and *which cloud* it talks to: the credentials come from
its own connector factory (single-tenant, multi-tenant, managed identity, sovereign clouds).
This module only replaces the transport. botbuilder's msrest client serializes each activity
through its model layer (~0.3 ms, and it silently drops entity fields it does not model, such
as ``streaminfo``'s) and sends it with ``requests`` on a thread; here activities go out as the
JSON the adapters built, on the event loop, and tokens are fetched off it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp

from adapters.teams.connector import ConnectorError, RetryingConnector
from agent_core.clock import SYSTEM_CLOCK

logger = logging.getLogger(__name__)

TOKEN_REUSE_SECONDS = 240.0
"""msal hands out tokens with >= 5 minutes left; reuse one for at most 4 before asking again."""


class TokenSource(Protocol):
    """Where ``BotConnectorClient`` gets the bearer token of each call (None: send none)."""

    async def token(self) -> str | None: ...


class CredentialsTokenSource:
    """Bearer tokens from botbuilder ``AppCredentials``, fetched on a worker thread.

    ``get_access_token`` is synchronous (msal, ``requests``): calling it on the event loop
    would stall every other turn while a token is fetched.

    >>> from types import SimpleNamespace
    >>> CredentialsTokenSource(SimpleNamespace(microsoft_app_id="")).enabled
    False
    """

    def __init__(self, credentials: Any) -> None:
        self._credentials = credentials
        self._token: str | None = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def enabled(self) -> bool:
        """False for the anonymous credentials botbuilder uses when auth is off."""
        return bool(getattr(self._credentials, "microsoft_app_id", None))

    async def token(self) -> str | None:
        if not self.enabled:
            return None
        if self._token is not None and time.monotonic() - self._fetched_at < TOKEN_REUSE_SECONDS:
            return self._token
        async with self._lock:
            if self._token is None or time.monotonic() - self._fetched_at >= TOKEN_REUSE_SECONDS:
                token = await asyncio.to_thread(self._credentials.get_access_token)
                self._token, self._fetched_at = str(token), time.monotonic()
        return self._token


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - SYSTEM_CLOCK.now())


class BotConnectorClient:
    """``adapters.teams.connector.TeamsConnector`` for one service URL::

    client = BotConnectorClient(session, "https://smba.trafficmanager.net/amer/", tokens)
    activity_id = await client.reply("a:1...", "1700000000001", {"type": "message"})
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        service_url: str,
        tokens: TokenSource | None = None,
    ) -> None:
        self._session = session
        self._base = service_url.rstrip("/") + "/v3/conversations"
        self._tokens = tokens

    async def _request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        token = await self._tokens.token() if self._tokens is not None else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            async with self._session.request(
                method, self._base + path, data=data, headers=headers, params=params
            ) as response:
                payload = await response.read()
                if response.status >= 400:
                    raise _error(response.status, payload, response.headers.get("Retry-After"))
        except aiohttp.ClientError as error:
            raise ConnectorError(0, "NetworkError", str(error)) from error
        except TimeoutError as error:
            raise ConnectorError(0, "Timeout", "the connector did not answer") from error
        return json.loads(payload) if payload else None

    @staticmethod
    def _path(conversation_id: str, activity_id: str | None = None) -> str:
        path = "/" + quote(conversation_id, safe="")
        if activity_id is not None:
            path += "/activities/" + quote(activity_id, safe="")
        return path

    async def send(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        result = await self._request("POST", self._path(conversation_id) + "/activities", activity)
        return _id(result)

    async def reply(
        self, conversation_id: str, reply_to_id: str, activity: Mapping[str, Any]
    ) -> str:
        if not reply_to_id:
            return await self.send(conversation_id, activity)
        result = await self._request("POST", self._path(conversation_id, reply_to_id), activity)
        return _id(result)

    async def update(
        self, conversation_id: str, activity_id: str, activity: Mapping[str, Any]
    ) -> None:
        body = {**activity, "id": activity_id}
        await self._request("PUT", self._path(conversation_id, activity_id), body)

    async def delete(self, conversation_id: str, activity_id: str) -> None:
        await self._request("DELETE", self._path(conversation_id, activity_id))

    async def send_targeted(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        result = await self._request(
            "POST",
            self._path(conversation_id) + "/activities",
            activity,
            params={"isTargetedActivity": "true"},
        )
        return _id(result)

    async def create_conversation(self, parameters: Mapping[str, Any]) -> str:
        result = await self._request("POST", "", parameters)
        return _id(result)

    async def get_member(self, conversation_id: str, member_id: str) -> dict[str, Any]:
        path = self._path(conversation_id) + "/members/" + quote(member_id, safe="")
        result = await self._request("GET", path)
        return result if isinstance(result, dict) else {}

    async def get_paged_members(
        self, conversation_id: str, *, page_size: int, continuation_token: str | None = None
    ) -> dict[str, Any]:
        params = {"pageSize": str(page_size)}
        if continuation_token:
            params["continuationToken"] = continuation_token
        path = self._path(conversation_id) + "/pagedmembers"
        result = await self._request("GET", path, params=params)
        return result if isinstance(result, dict) else {}


def _id(result: Any) -> str:
    return str(result.get("id") or "") if isinstance(result, dict) else ""


def _error(status: int, payload: bytes, retry_after: str | None) -> ConnectorError:
    code, message = "", payload[:200].decode("utf-8", "replace")
    try:
        error = json.loads(payload).get("error") or {}
        code, message = str(error.get("code") or ""), str(error.get("message") or "")
    except (ValueError, AttributeError):
        pass
    return ConnectorError(status, code, message, retry_after=_retry_after(retry_after))


class ConnectorPool:
    """One ``RetryingConnector`` per service URL, over one aiohttp session.

    The first caller for a service URL brings the botbuilder credentials for it (from the
    activity's turn); later callers (the roster lookup) reuse that connector.

    >>> import asyncio
    >>> async def demo():
    ...     async with ConnectorPool() as pool:
    ...         return pool.get("https://smba/") is pool.get("https://smba")
    >>> asyncio.run(demo())
    True
    """

    def __init__(self, *, timeout: float = 30.0, retry_sleep: Any = asyncio.sleep) -> None:
        self._timeout = timeout
        self._retry_sleep = retry_sleep
        self._session: aiohttp.ClientSession | None = None
        self._connectors: dict[str, RetryingConnector] = {}

    async def __aenter__(self) -> ConnectorPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The shared client session (created on first use, inside the event loop)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                connector=aiohttp.TCPConnector(limit=100),
            )
        return self._session

    def lookup(self, service_url: str) -> RetryingConnector | None:
        """The connector already made for ``service_url``, if any."""
        return self._connectors.get(service_url.rstrip("/"))

    def get(self, service_url: str, credentials: Any = None) -> RetryingConnector:
        key = service_url.rstrip("/")
        connector = self._connectors.get(key)
        if connector is None:
            tokens = CredentialsTokenSource(credentials) if credentials is not None else None
            client = BotConnectorClient(self.session, service_url, tokens)
            connector = RetryingConnector(client, sleep=self._retry_sleep)
            self._connectors[key] = connector
        return connector

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._connectors.clear()
