"""Fixes for botbuilder 4.17.1 (archived upstream), in one place, each with a test.

1. **An expired token, or one signed by an unknown key, answered HTTP 500** instead of 401:
   ``jwt.ExpiredSignatureError`` and the ``IndexError`` of an unknown ``kid`` escape
   ``CloudAdapter.process``, which only maps ``PermissionError``. ``GuardedAuthentication``
   turns every authentication failure into ``PermissionError`` (-> 401).
2. **The OpenID signing keys were fetched with blocking ``requests`` on the event loop**
   (``_OpenIdMetadata._refresh``). ``install_async_openid_metadata`` puts an aiohttp-based
   ``AsyncOpenIdMetadata`` in ``JwtTokenExtractor.metadataCache`` (botbuilder's own per-URL
   cache, looked up by every token validation) and prefetches the keys at startup.
3. **Each inbound activity built two msrest clients** (a ``ConnectorClient`` and a
   ``UserTokenClient``): ~6-10 ms of CPU, mostly ``ClientRetryPolicy.__init__`` scanning its
   500-item ``safe_codes`` list per status code. ``GuardedAuthentication`` caches both, per
   (app id, service URL, audience) and per app id.
4. **Each activity's token was decoded five times** (issuer checks, header, signature), each
   decode checking every character in Python (PyJWT): ~0.5 ms per activity. The Bot Framework
   reuses one token for many activities, so ``GuardedAuthentication`` remembers a validated
   token for the channel and service URL it was validated with, until it expires (at most
   ``VALIDATED_TOKEN_SECONDS``, so a revoked signing key stops working within minutes).

``GuardedAuthentication`` wraps a ``BotFrameworkAuthentication`` through its public interface;
only fix 2 reaches into a private structure, and ``check_version`` warns when botbuilder is
not the version these fixes were verified on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import aiohttp
from aiohttp import web
from botframework.connector.auth import (
    AuthenticateRequestResult,
    AuthenticationConstants,
    BotFrameworkAuthentication,
    ClaimsIdentity,
    ConnectorFactory,
    GovernmentConstants,
    JwtTokenValidation,
    UserTokenClient,
)
from botframework.connector.auth.jwt_token_extractor import JwtTokenExtractor
from jwt.algorithms import RSAAlgorithm

logger = logging.getLogger(__name__)

VERIFIED_VERSION = "4.17.1"
VALIDATED_TOKEN_SECONDS = 300.0
VALIDATED_TOKEN_ENTRIES = 1024


def check_version() -> bool:
    """True when the installed botbuilder is the one these fixes were verified against."""
    try:
        installed = version("botbuilder-core")
    except PackageNotFoundError:  # pragma: no cover - botbuilder is a dependency
        return False
    if installed != VERIFIED_VERSION:
        logger.warning(
            "botbuilder-core %s is installed; the Teams host's fixes were verified on %s. "
            "Run tests/bots/teams/test_auth.py before deploying.",
            installed,
            VERIFIED_VERSION,
        )
        return False
    return True


# --------------------------------------------------------------------------- fix 2


@dataclass(frozen=True, slots=True)
class SigningKey:
    """What botbuilder's token validation reads from a metadata entry.

    >>> SigningKey(public_key=None).endorsements
    []
    """

    public_key: Any
    endorsements: list[str] = field(default_factory=list)


class AsyncOpenIdMetadata:
    """Drop-in for botbuilder's ``_OpenIdMetadata`` that fetches keys with aiohttp.

    Same refresh rules: keys older than a day are refreshed; an unknown key id triggers at
    most one refresh per ``miss_refresh`` seconds. An unknown key raises ``PermissionError``
    (botbuilder's version crashed with ``IndexError``).

    >>> AsyncOpenIdMetadata("https://login.botframework.com/v1/.well-known/openidconfiguration"
    ...                     ).last_updated.year
    1
    """

    def __init__(
        self,
        url: str,
        *,
        max_age: timedelta = timedelta(days=1),
        miss_refresh: timedelta = timedelta(minutes=5),
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._max_age = max_age
        self._miss_refresh = miss_refresh
        self._timeout = timeout
        self._keys: dict[str, SigningKey] = {}
        self.last_updated = datetime.min
        self._lock: asyncio.Lock | None = None

    async def refresh(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.get(self.url) as response:
                response.raise_for_status()
                jwks_uri = (await response.json(content_type=None))["jwks_uri"]
            async with session.get(jwks_uri) as response:
                response.raise_for_status()
                keys = (await response.json(content_type=None))["keys"]
        self._keys = {
            str(key["kid"]): SigningKey(
                public_key=RSAAlgorithm.from_jwk(json.dumps(key)),
                endorsements=list(key.get("endorsements", [])),
            )
            for key in keys
            if key.get("kid") and key.get("kty") == "RSA"
        }
        self.last_updated = datetime.now()
        logger.info("loaded %d signing keys from %s", len(self._keys), self.url)

    async def _refresh_once(self, older_than: timedelta) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.last_updated < datetime.now() - older_than:
                await self.refresh()

    async def get(self, key_id: str | None) -> SigningKey:
        """The signing key ``key_id``; ``PermissionError`` if the issuer does not publish it."""
        if self.last_updated < datetime.now() - self._max_age:
            await self._refresh_once(self._max_age)
        key = self._keys.get(key_id or "")
        if key is None and self.last_updated < datetime.now() - self._miss_refresh:
            await self._refresh_once(self._miss_refresh)
            key = self._keys.get(key_id or "")
        if key is None:
            raise PermissionError(f"token signed with an unknown key ({key_id!r})")
        return key


def metadata_urls(configuration: Any) -> list[str]:
    """Every OpenID metadata URL botbuilder may validate tokens against with this config."""
    configured = [
        getattr(configuration, "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL", None),
        getattr(configuration, "TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL", None),
    ]
    if any(configured):
        return [url for url in configured if url]
    if getattr(configuration, "CHANNEL_SERVICE", None) == GovernmentConstants.CHANNEL_SERVICE:
        return [
            GovernmentConstants.TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL,
            GovernmentConstants.TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL,
        ]
    return [
        AuthenticationConstants.TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL,
        AuthenticationConstants.TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL,
    ]


def install_async_openid_metadata(urls: list[str]) -> list[AsyncOpenIdMetadata]:
    """Register ``AsyncOpenIdMetadata`` for ``urls`` in botbuilder's metadata cache."""
    installed = [AsyncOpenIdMetadata(url) for url in urls]
    for metadata in installed:
        JwtTokenExtractor.metadataCache[metadata.url] = metadata
    return installed


async def prefetch(metadata: list[AsyncOpenIdMetadata]) -> None:
    """Load signing keys before the first request; a failure is logged, not fatal."""
    for entry in metadata:
        try:
            await entry.refresh()
        except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as error:
            logger.warning("could not prefetch signing keys from %s: %s", entry.url, error)


# --------------------------------------------------------------------------- fixes 1 and 3


class _CachingConnectorFactory(ConnectorFactory):  # type: ignore[misc]
    def __init__(
        self, inner: ConnectorFactory, cache: dict[tuple[str, str, str], Any], app_id: str
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._app_id = app_id

    async def create(self, service_url: str, audience: str | None = None) -> Any:
        key = (self._app_id, service_url, audience or "")
        client = self._cache.get(key)
        if client is None:
            client = await self._inner.create(service_url, audience)
            self._cache[key] = client
        return client


def _app_id(claims_identity: ClaimsIdentity | None) -> str:
    if claims_identity is None or not claims_identity.claims:
        return ""
    claims = claims_identity.claims
    return str(
        claims.get(AuthenticationConstants.AUDIENCE_CLAIM)
        or JwtTokenValidation.get_app_id_from_claims(claims)
        or ""
    )


class GuardedAuthentication(BotFrameworkAuthentication):  # type: ignore[misc]
    """Wraps botbuilder's authentication: failures are 401s, clients are reused.

    Authentication failures are logged with their reason (never the token).

    >>> from botbuilder.integration.aiohttp import ConfigurationBotFrameworkAuthentication
    >>> from types import SimpleNamespace
    >>> GuardedAuthentication(ConfigurationBotFrameworkAuthentication(SimpleNamespace())
    ...                       ).cached_clients
    0
    """

    def __init__(self, inner: BotFrameworkAuthentication) -> None:
        self._inner = inner
        self._connectors: dict[tuple[str, str, str], Any] = {}
        self._token_clients: dict[str, UserTokenClient] = {}
        self._validated: OrderedDict[tuple[str, str, str], tuple[float, Any]] = OrderedDict()
        self.failures = 0

    async def authenticate_request(
        self, activity: Any, auth_header: str
    ) -> AuthenticateRequestResult:
        key = (auth_header, activity.channel_id, activity.service_url)
        remembered = self._validated.get(key) if auth_header else None
        if remembered is not None and remembered[0] > time.time():
            return remembered[1]
        result = await self._authenticate(activity, auth_header)
        if auth_header:
            self._remember(key, result)
        return result

    def remembered_until(self, auth_header: str, channel_id: str, service_url: str) -> float | None:
        """Until when (epoch seconds) a validated token is accepted without re-validation."""
        entry = self._validated.get((auth_header, channel_id, service_url))
        return entry[0] if entry is not None else None

    def _remember(self, key: tuple[str, str, str], result: AuthenticateRequestResult) -> None:
        claims = result.claims_identity.claims if result.claims_identity else {}
        expires = claims.get("exp") if isinstance(claims, dict) else None
        if not isinstance(expires, int | float):
            return
        self._validated[key] = (min(float(expires), time.time() + VALIDATED_TOKEN_SECONDS), result)
        while len(self._validated) > VALIDATED_TOKEN_ENTRIES:
            self._validated.popitem(last=False)

    async def _authenticate(self, activity: Any, auth_header: str) -> AuthenticateRequestResult:
        try:
            result = await self._inner.authenticate_request(activity, auth_header or None)
        except PermissionError as error:
            self._refused(error)
            raise
        except (aiohttp.ClientError, TimeoutError) as error:
            logger.error("signing keys unavailable: %s", error)
            raise web.HTTPServiceUnavailable(text="signing keys unavailable") from error
        except Exception as error:  # botbuilder raises jwt errors, IndexError, bare Exception
            self._refused(error)
            raise PermissionError(f"invalid token: {type(error).__name__}") from error
        if result.connector_factory is not None:
            result.connector_factory = _CachingConnectorFactory(
                result.connector_factory, self._connectors, _app_id(result.claims_identity)
            )
        return result

    @property
    def cached_clients(self) -> int:
        """How many msrest clients were built (connector + user token), for checks."""
        return len(self._connectors) + len(self._token_clients)

    def _refused(self, error: Exception) -> None:
        self.failures += 1
        logger.warning("refused an activity: %s: %s", type(error).__name__, error)

    async def authenticate_streaming_request(
        self, auth_header: str, channel_id_header: str
    ) -> AuthenticateRequestResult:
        return await self._inner.authenticate_streaming_request(auth_header, channel_id_header)

    def create_connector_factory(self, claims_identity: ClaimsIdentity) -> ConnectorFactory:
        return _CachingConnectorFactory(
            self._inner.create_connector_factory(claims_identity),
            self._connectors,
            _app_id(claims_identity),
        )

    async def create_user_token_client(self, claims_identity: ClaimsIdentity) -> UserTokenClient:
        key = _app_id(claims_identity)
        client = self._token_clients.get(key)
        if client is None:
            client = await self._inner.create_user_token_client(claims_identity)
            self._token_clients[key] = client
        return client

    def create_bot_framework_client(self) -> Any:
        return self._inner.create_bot_framework_client()

    def get_originating_audience(self) -> str:
        return str(self._inner.get_originating_audience())

    async def authenticate_channel_request(self, auth_header: str) -> ClaimsIdentity:
        return await self._inner.authenticate_channel_request(auth_header)
