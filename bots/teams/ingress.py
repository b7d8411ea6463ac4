"""The boundary of ``POST /api/messages``: whatever the bytes, an answer below 500.

    Content-Type: application/json (any parameters; the body is read as UTF-8)    else 415
    the body: UTF-8 JSON, an activity (``adapters.teams.payloads.read_activity``)   else 400
    Authorization: the Bot Framework's token, ``verified`` for this bot, this
      activity's channel and service URL, with a key its issuer publishes          else 401
    ------------------------------------------------------------- authenticated from here on
    the bot's handlers (``TeamsBot.handle``)              a failure: dropped (200)

Nothing before authentication has a side effect. ``verified`` is a pure step, like Slack's
``signed``: the token's signature, expiry (5 minutes of clock skew), issuer, audience and
``serviceurl`` claim, and the key's endorsement of the activity's channel. The keys come from
``bots.teams.signing_keys`` (fetched with aiohttp, kept); while none could ever be fetched a
token cannot be checked, and the request is answered 503 so the Bot Framework delivers it
again. A token that verified is remembered for its channel and service URL until it expires
(at most ``REMEMBER_SECONDS``): the Bot Framework sends one token with many activities.

With authentication off (no ``MicrosoftAppId``) no token is checked; the bot then listens
on 127.0.0.1 only, unless told otherwise (``bots.server``).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from adapters.teams.payloads import AnyActivity, read_activity
from agent_core.clock import SYSTEM_CLOCK
from agent_core.errors import MalformedPayload, Unauthenticated
from bots.teams.signing_keys import KeysUnavailable, SigningKey, SigningKeys

if TYPE_CHECKING:
    from aiohttp import web

    from bots.metrics import ChannelMetrics
    from bots.teams.settings import TeamsSettings

ALGORITHMS = ("RS256", "RS384", "RS512")
CLOCK_SKEW = 5 * 60
REMEMBER_SECONDS = 300.0
REMEMBERED_TOKENS = 1024

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Issuers:
    """Whose tokens this bot accepts: the channel's (its ``aud`` is the bot, its
    ``serviceurl`` the activity's) and the Emulator's (its ``appid`` / ``azp`` is the bot).

    >>> from bots.teams.settings import TeamsSettings
    >>> Issuers.of(TeamsSettings(app_id="a", app_password="p")).channel
    'https://api.botframework.com'
    """

    app_id: str
    channel: str
    channel_keys: str
    emulator: frozenset[str]
    emulator_keys: str | None

    @classmethod
    def of(cls, settings: TeamsSettings) -> Issuers:
        """The issuers of the configured cloud (botbuilder's constants), or the endpoints
        the settings name (a sovereign cloud, a local fake: then the Emulator's tokens only
        when its keys' URL is named too)."""
        from botframework.connector.auth import (
            AuthenticationConstants,
            EmulatorValidation,
            GovernmentConstants,
        )

        cloud = AuthenticationConstants if settings.channel_service is None else GovernmentConstants
        emulator = EmulatorValidation.TO_BOT_FROM_EMULATOR_TOKEN_VALIDATION_PARAMETERS.issuer
        emulator_keys = settings.emulator_openid_metadata_url
        if emulator_keys is None and not settings.parameterized:
            emulator_keys = cloud.TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL
        return cls(
            app_id=settings.app_id or "",
            channel=settings.token_issuer or cloud.TO_BOT_FROM_CHANNEL_TOKEN_ISSUER,
            channel_keys=settings.openid_metadata_url
            or cloud.TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL,
            emulator=frozenset(emulator) if emulator_keys else frozenset(),
            emulator_keys=emulator_keys,
        )

    def keys_url(self, issuer: object) -> str:
        """Where the keys of ``issuer`` are published; ``Unauthenticated`` for any other."""
        if issuer == self.channel:
            return self.channel_keys
        if issuer in self.emulator and self.emulator_keys is not None:
            return self.emulator_keys
        raise Unauthenticated("the token is not from the Bot Framework")


def bearer(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header.

    >>> bearer("Bearer a.b.c")
    'a.b.c'
    >>> bearer("Basic dXNlcg==")
    Traceback (most recent call last):
    ...
    agent_core.errors.Unauthenticated: no bearer token
    """
    scheme, _, token = authorization.partition(" ")
    if scheme != "Bearer" or not token or " " in token:
        raise Unauthenticated("no bearer token")
    return token


def peek(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The token's header and claims, unverified (to choose the key that must verify it)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise Unauthenticated("not a JWT")
    try:
        header, claims = (json.loads(_unbase64(part)) for part in parts[:2])
    except (ValueError, binascii.Error, RecursionError):
        raise Unauthenticated("not a JWT") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Unauthenticated("not a JWT")
    return header, claims


def _unbase64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verified(
    token: str,
    key: SigningKey,
    *,
    issuers: Issuers,
    channel_id: str,
    service_url: str,
    now: float,
) -> dict[str, Any]:
    """The claims of ``token`` when ``key`` signed it for this bot and this activity, and it
    is valid ``now``; ``Unauthenticated`` saying what failed otherwise (never the token).

    A channel token names the bot as its audience and the activity's service URL (the
    answer goes there: a token for another service cannot redirect it); an Emulator token
    names the bot in ``appid`` (version 1.0) or ``azp`` (2.0).
    """
    import jwt

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key.public_key,
            algorithms=list(ALGORITHMS),
            leeway=CLOCK_SKEW,
            options={"verify_aud": False, "verify_iat": False, "require": ["exp", "iss"]},
        )
    except (jwt.PyJWTError, ValueError, TypeError) as error:
        raise Unauthenticated(f"invalid token ({type(error).__name__})") from None
    if not key.endorses(channel_id):
        raise Unauthenticated(f"the signing key does not sign for {channel_id[:40]!r}")
    if claims["iss"] == issuers.channel:
        if claims.get("aud") != issuers.app_id:
            raise Unauthenticated("the token is for another app")
        if claims.get("serviceurl") != service_url:
            raise Unauthenticated("the token is for another service URL")
    elif _emulator_app(claims) != issuers.app_id:
        raise Unauthenticated("the Emulator token is for another app")
    if float(claims["exp"]) + CLOCK_SKEW < now:
        raise Unauthenticated("the token expired")
    return claims


def _emulator_app(claims: Mapping[str, Any]) -> object:
    version = claims.get("ver")
    if version in (None, "1.0"):
        return claims.get("appid")
    return claims.get("azp") if version == "2.0" else None


class TokenCheck:
    """Checks the tokens of one bot: the issuers' keys and the tokens that verified lately.

    >>> from bots.teams.settings import TeamsSettings
    >>> TokenCheck(TeamsSettings(app_id="a", app_password="p")).failures
    0
    """

    def __init__(self, settings: TeamsSettings) -> None:
        self.issuers = Issuers.of(settings)
        urls = (self.issuers.channel_keys, self.issuers.emulator_keys)
        self.keys = {url: SigningKeys(url) for url in urls if url is not None}
        self._remembered: OrderedDict[tuple[str, str, str], tuple[float, dict[str, Any]]] = (
            OrderedDict()
        )
        self.failures = 0

    async def check(self, authorization: str, activity: Mapping[str, Any]) -> dict[str, Any]:
        """The claims of the request's token for ``activity``; ``Unauthenticated`` (counted)
        when it does not verify, ``KeysUnavailable`` when no key could be fetched."""
        channel_id = str(activity.get("channelId") or "")
        service_url = str(activity.get("serviceUrl") or "")
        remembered = self._remembered.get((authorization, channel_id, service_url))
        now = SYSTEM_CLOCK.now()
        if remembered is not None and remembered[0] > now:
            return remembered[1]
        try:
            token = bearer(authorization)
            header, unverified = peek(token)
            keys = self.keys[self.issuers.keys_url(unverified.get("iss"))]
            key = await keys.get(str(header.get("kid") or ""))
            claims = verified(
                token,
                key,
                issuers=self.issuers,
                channel_id=channel_id,
                service_url=service_url,
                now=now,
            )
        except Unauthenticated:
            self.failures += 1
            raise
        self._remember((authorization, channel_id, service_url), claims, now)
        return claims

    def remembered_until(
        self, authorization: str, channel_id: str, service_url: str
    ) -> float | None:
        """Until when (epoch seconds) a verified token is accepted without checking it again."""
        entry = self._remembered.get((authorization, channel_id, service_url))
        return entry[0] if entry is not None else None

    def _remember(self, key: tuple[str, str, str], claims: dict[str, Any], now: float) -> None:
        self._remembered[key] = (min(float(claims["exp"]), now + REMEMBER_SECONDS), claims)
        while len(self._remembered) > REMEMBERED_TOKENS:
            self._remembered.popitem(last=False)

    async def prefetch(self) -> None:
        """Fetch the keys before the first request (a failure is logged, not fatal)."""
        for keys in self.keys.values():
            try:
                await keys.refresh()
            except (OSError, TimeoutError, KeyError, ValueError) as error:  # fetched on use
                log.warning("teams: could not prefetch signing keys from %s (%s)", keys.url, error)


class Endpoint(Protocol):
    """What ``/api/messages`` hands a request to (``bots.teams.bot.TeamsBot``)."""

    settings: TeamsSettings
    metrics: ChannelMetrics
    authentication: TokenCheck

    async def handle(self, activity: AnyActivity, wire: Mapping[str, Any]) -> tuple[int, Any]: ...


async def receive(bot: Endpoint, body: Any, authorization: str) -> tuple[int, Any]:
    """One parsed request body, transport-free (what ``/api/messages`` runs after reading
    the body): ``MalformedPayload`` when it is not an activity, ``Unauthenticated`` when its
    token does not verify; else the status and JSON body the bot answers with (the bot is
    handed the checked model and the body it was read from, never checked again)."""
    activity = read_activity(body)
    if bot.settings.auth_enabled:
        await bot.authentication.check(authorization, body)
    return await bot.handle(activity, body)


async def handle_messages(bot: Endpoint, request: web.Request) -> web.StreamResponse:
    """``POST /api/messages`` (see the module docstring)."""
    from aiohttp import web

    started = time.perf_counter()
    try:
        body = await _parse(request)
        status, answer = await receive(bot, body, request.headers.get("Authorization", ""))
    except web.HTTPException as refusal:
        bot.metrics.refused.labels(status=str(refusal.status)).inc()
        raise
    except MalformedPayload as problem:
        return _refused(bot, 400, f"not an activity ({problem})")
    except Unauthenticated as problem:
        return _refused(bot, 401, str(problem))
    except KeysUnavailable as problem:  # the Bot Framework delivers it again
        return _refused(bot, 503, str(problem))
    finally:
        bot.metrics.ack_seconds.observe(time.perf_counter() - started)
    if answer is None:
        return web.Response(status=status)
    return web.json_response(answer, status=status)


def _refused(bot: Endpoint, status: int, why: str) -> web.Response:
    """Refuse a request before authentication: counted, logged once (never the body or the
    token), no side effect."""
    from aiohttp import web

    bot.metrics.refused.labels(status=str(status)).inc()
    log.info("teams: refused a request (%d): %s", status, why[:200])
    return web.Response(status=status)


async def _parse(request: web.Request) -> Any:
    """The JSON a request carries, or the HTTP error that refuses it."""
    from aiohttp import web

    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="expected application/json")
    raw = await request.read()
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep
        raise web.HTTPBadRequest(text="body is not JSON") from error
