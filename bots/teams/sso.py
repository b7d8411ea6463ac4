"""Teams single sign-on: people's tokens for Entra-protected MCP servers, without leaving
the chat.

When a person must connect a server whose tokens the channel issues
(``TEAMS_SSO_SERVERS``, ``IssuedTokenAuth``), the turn's sign-in prompt carries the
sign-in to finish (``SignInComponent.exchange``) and ``SingleSignOn.card`` makes it the Bot
Framework's OAuthCard: the token service's sign-in link (``GetSignInResource``, the
fallback button) and a ``tokenExchangeResource`` naming a one-time exchange id bound here,
in the shared cache, to that sign-in, that person (``teams:<tenant>:<aadObjectId>``) and
the connection. The Teams client then asks Entra for a token for the resource silently and
sends it back as the ``signin/tokenExchange`` invoke:

    signin/tokenExchange  id, connection and sender must match a card sent to that person;
                          the id is taken once (a replay is refused); the Teams token is
                          exchanged at the token service (botbuilder's ``TokenApiClient``,
                          ``/api/usertoken/exchange``), kept sealed (``McpHub.finish_issued``)
                          and the waiting question is asked again (``on_signed_in``: the
                          path the OAuth callback takes) -> 200. Anything else -> 412, and
                          Teams shows the card's sign-in button instead.
    signin/verifyState    the button's magic code, after the person signed in on the token
                          service's page: their token is read (``GetToken``) and kept the
                          same way -> 200; else 412.
    signin/failure        logged once (its code), the person told in one sentence -> 200.

Only ``bots.teams.ingress``-verified activities get here (unsigned ones are 401 before), so
the sender's ``aadObjectId`` is Teams' word. Tokens are never logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError
from adapters.teams.context import Wire, tenant_id, user_aad_object_id
from adapters.teams.payloads import Activity
from agent_core.components import SignInComponent
from agent_core.mcp.auth.signin import LIFETIME, SignInRefused
from agent_core.mcp.hub import McpHub, SignedIn
from agent_core.state import KeyValueStore
from bots.teams.outbound import Outbound
from bots.teams.settings import TeamsSettings

logger = logging.getLogger(__name__)

OAUTH_CARD = "application/vnd.microsoft.card.oauth"
EXCHANGE = "signin/tokenExchange"
VERIFY = "signin/verifyState"
FAILURE = "signin/failure"
INVOKES = frozenset({EXCHANGE, VERIFY, FAILURE})
DEFAULT_TOKEN_SERVICE = "https://api.botframework.com"
"""botbuilder's ``OAUTH_URL`` when none is set (public cloud)."""
FAILED_SENTENCE = (
    "Signing you in with your Teams account did not work; use the sign-in button on the "
    "card instead."
)

Answer = tuple[int, Any]
OnSignedIn = Callable[[SignedIn], Awaitable[None]]


def person_of(tenant: str, aad_object_id: str) -> str:
    """The person a Teams sign-in belongs to (``User.id`` as the resolver makes it).

    >>> person_of("t1", "aad-ana")
    'teams:t1:aad-ana'
    """
    return f"teams:{tenant}:{aad_object_id}"


def _expiry(value: object) -> float | None:
    """The token service's ``expiration`` (ISO 8601) as epoch seconds, if it said one."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _issued(result: object) -> tuple[str, float | None] | None:
    """The token of the token service's ``TokenResponse`` and when it expires (None: an
    ``ErrorResponse``, or no token)."""
    token = getattr(result, "token", None)
    if not isinstance(token, str) or not token:
        return None
    return token, _expiry(getattr(result, "expiration", None))


def _account(activity: Wire) -> dict[str, str]:
    """Where the token service knows the sender: their Bot Framework id, and the service."""
    sender = activity.get("from")
    user_id = sender.get("id") if isinstance(sender, Mapping) else None
    return {"user_id": str(user_id or ""), "service_url": str(activity.get("serviceUrl") or "")}


def _value(activity: Wire) -> Mapping[str, Any]:
    value = activity.get("value")
    return value if isinstance(value, Mapping) else {}


class SingleSignOn:
    """The OAuthCards a turn sends and the ``signin/*`` invokes; see the module docstring.

    >>> from agent_core.state import MemoryKeyValueStore
    >>> from bots.teams.connector import ConnectorPool
    >>> settings = TeamsSettings(sso_connection="entra", sso_app_id="x", app_id="b",
    ...                          app_type="UserAssignedMSI", app_tenant_id="t")
    >>> SingleSignOn(settings, Outbound(settings, ConnectorPool(), MemoryKeyValueStore()),
    ...              MemoryKeyValueStore(), None).connection
    'entra'
    """

    def __init__(
        self,
        settings: TeamsSettings,
        outbound: Outbound,
        cache: KeyValueStore,
        hub: McpHub | None,
        *,
        on_signed_in: OnSignedIn | None = None,
    ) -> None:
        assert settings.sso_connection is not None
        self.connection = settings.sso_connection
        self._settings = settings
        self._outbound = outbound
        self._cache = cache
        self._hub = hub
        self.on_signed_in = on_signed_in

    # ------------------------------------------------------------------ the token service

    async def _client(self, service_url: str) -> Any:
        """botbuilder's token service client, with the bot's own credentials (the token is
        fetched off the event loop first: msrest asks for it synchronously)."""
        from botframework.connector.token_api.aio import TokenApiClient

        credentials = await self._outbound.credentials(service_url)
        if credentials is not None:
            await asyncio.to_thread(credentials.get_access_token)
        base = (self._settings.oauth_url or DEFAULT_TOKEN_SERVICE).rstrip("/")
        return TokenApiClient(credentials, base)

    # ------------------------------------------------------------------ the card

    @staticmethod
    def _exchange_key(exchange_id: str) -> str:
        return "teams:sso:" + hashlib.sha256(exchange_id.encode("utf-8")).hexdigest()[:40]

    @staticmethod
    def _account_key(person: str) -> str:
        return "teams:sso:account:" + hashlib.sha256(person.encode("utf-8")).hexdigest()[:32]

    async def renew(self, person: str, server: str) -> tuple[str, float | None] | None:
        """The person's fresh token from the token service (``GetToken``: it refreshes with
        the refresh token it keeps), for ``IssuedTokenAuth``; None when it has none."""
        account = await self._cache.get(self._account_key(person))
        if not isinstance(account, Mapping):
            return None
        try:
            client = await self._client(str(account.get("service_url") or ""))
            result = await client.user_token.get_token(
                str(account.get("user_id") or ""), self.connection, "msteams"
            )
        except Exception as failed:
            logger.info("teams: no fresh token for %s (%s)", server, type(failed).__name__)
            return None
        return _issued(result)

    @staticmethod
    def _person_key(person: str) -> str:
        return "teams:sso:person:" + hashlib.sha256(person.encode("utf-8")).hexdigest()[:32]

    async def card(self, prompt: SignInComponent, ref: ConversationRef) -> dict[str, Any] | None:
        """The OAuthCard attachment of ``prompt`` for the asker of ``ref`` (None: not a
        single sign-on prompt, or the token service could not be asked)."""
        aad = str(ref.user.get("aadObjectId") or "")
        if prompt.exchange is None or not aad:
            return None
        try:
            link, uri, provider = await self._sign_in_resource(ref)
        except Exception as failed:  # the token service: the ordinary card still works
            logger.warning("teams: no sign-in resource from the token service (%s)", failed)
            return None
        exchange_id = secrets.token_urlsafe(18)
        person = person_of(ref.tenant_id, aad)
        bound = {"state": prompt.exchange, "person": person, "connection": self.connection}
        await self._cache.set(self._exchange_key(exchange_id), bound, ttl=LIFETIME)
        await self._cache.set(self._person_key(person), exchange_id, ttl=LIFETIME)
        resource = {"id": exchange_id, "uri": uri or self._settings.sso_resource or ""}
        if provider:
            resource["providerId"] = provider
        return {
            "contentType": OAUTH_CARD,
            "content": {
                "text": prompt.message or f"Connect your {prompt.service} account to go on.",
                "connectionName": self.connection,
                "tokenExchangeResource": resource,
                "buttons": [{"type": "signin", "title": prompt.label, "value": link}],
            },
        }

    async def _sign_in_resource(self, ref: ConversationRef) -> tuple[str, str | None, str | None]:
        """The token service's sign-in link and exchange resource for the asker."""
        from botbuilder.schema import Activity as SdkActivity
        from botframework.connector.auth.user_token_client import UserTokenClient

        activity = SdkActivity().deserialize(
            {
                "type": "message",
                "serviceUrl": ref.service_url,
                "channelId": ref.channel_id,
                "from": ref.user,
                "recipient": ref.bot,
                "conversation": {"id": ref.conversation_id, "tenantId": ref.tenant_id},
            }
        )
        state = UserTokenClient.create_token_exchange_state(
            self._settings.app_id, self.connection, activity
        )
        client = await self._client(ref.service_url)
        found = await client.bot_sign_in.get_sign_in_resource(state)
        exchange = found.token_exchange_resource
        uri = exchange.uri if exchange is not None else None
        provider = exchange.provider_id if exchange is not None else None
        return str(found.sign_in_link), uri, provider

    # ------------------------------------------------------------------ the invokes

    async def invoke(self, activity: Activity, wire: Wire) -> Answer:
        """Answer one ``signin/*`` invoke (``INVOKES``): checked (``activity``), and as
        Teams sent it (``wire``)."""
        match activity.name:
            case "signin/tokenExchange":
                return await self._exchange(wire)
            case "signin/verifyState":
                return await self._verify(wire)
            case _:
                return await self._failure(activity, wire)

    async def _bound(self, exchange_id: str) -> Mapping[str, Any] | None:
        found = await self._cache.get(self._exchange_key(exchange_id))
        return found if isinstance(found, Mapping) else None

    async def _exchange(self, activity: Wire) -> Answer:
        value = _value(activity)
        exchange_id = str(value.get("id") or "")[:200]
        connection = str(value.get("connectionName") or "")[:200]
        token = value.get("token")

        def refused(detail: str) -> Answer:
            logger.info("teams: a token exchange was refused (%s)", detail)
            body = {"id": exchange_id, "connectionName": connection, "failureDetail": detail}
            return 412, body

        person = person_of(tenant_id(activity), user_aad_object_id(activity))
        bound = await self._bound(exchange_id) if exchange_id else None
        if bound is None:
            return refused("no sign-in card has this exchange id")
        if connection != self.connection or bound.get("connection") != connection:
            return refused("not this bot's connection")
        if bound.get("person") != person or not user_aad_object_id(activity):
            return refused("not the person the card was sent to")
        if not isinstance(token, str) or not token:
            return refused("no token")
        used = f"{self._exchange_key(exchange_id)}:used"
        if not await self._cache.add(used, ttl=LIFETIME):  # atomic: of two, one goes on
            return refused("this exchange id was used already")
        try:
            issued = await self._exchange_at_token_service(activity, token)
        except Exception as failed:  # botbuilder's and msrest's errors: never the token
            return refused(f"the token service refused ({type(failed).__name__})")
        if issued is None:
            return refused("the token service could not exchange the token")
        if not await self._finish(str(bound["state"]), person, issued, _account(activity)):
            return refused("the sign-in is over (used or expired)")
        return 200, {"id": exchange_id, "connectionName": connection}

    async def _exchange_at_token_service(
        self, activity: Wire, token: str
    ) -> tuple[str, float | None] | None:
        client = await self._client(str(activity.get("serviceUrl") or ""))
        sender = str((activity.get("from") or {}).get("id") or "")
        channel = str(activity.get("channelId") or "msteams")
        result = await client.user_token.exchange_async(
            sender, self.connection, channel, token=token
        )
        return _issued(result)

    async def _finish(
        self,
        state: str,
        person: str,
        issued: tuple[str, float | None],
        account: Mapping[str, str],
    ) -> bool:
        """Keep the person's token (sealed) and ask their waiting question again;
        ``account`` (their Bot Framework id and service URL) is where ``renew`` asks for
        their next token."""
        if self._hub is None:
            return False
        try:
            signed = await self._hub.finish_issued(
                state=state, person=person, token=issued[0], expires_at=issued[1]
            )
        except SignInRefused as refusal:
            logger.info("teams: a single sign-on finished nothing (%s)", refusal.reason)
            return False
        await self._cache.delete(self._person_key(person))
        await self._cache.set(self._account_key(person), account)
        if self.on_signed_in is not None:
            try:
                await self.on_signed_in(signed)
            except Exception:  # the person is connected; only the re-asked question failed
                logger.exception("teams: the question waiting for %s failed", signed.server)
        return True

    async def _verify(self, activity: Wire) -> Answer:
        """The fallback's magic code: the person signed in on the token service's page."""
        value = _value(activity)
        code = str(value.get("state") or "")[:64]
        person = person_of(tenant_id(activity), user_aad_object_id(activity))
        exchange_id = await self._cache.get(self._person_key(person))
        bound = await self._bound(exchange_id) if isinstance(exchange_id, str) else None
        if not code or bound is None or bound.get("person") != person:
            logger.info("teams: a sign-in code matched no sign-in of its sender")
            return 412, None
        try:
            issued = await self._token_by_code(activity, code)
        except Exception as failed:
            logger.info("teams: the token service refused a code (%s)", type(failed).__name__)
            return 412, None
        account = _account(activity)
        if issued is None or not await self._finish(str(bound["state"]), person, issued, account):
            return 412, None
        return 200, None

    async def _token_by_code(self, activity: Wire, code: str) -> tuple[str, float | None] | None:
        client = await self._client(str(activity.get("serviceUrl") or ""))
        sender = str((activity.get("from") or {}).get("id") or "")
        channel = str(activity.get("channelId") or "msteams")
        result = await client.user_token.get_token(sender, self.connection, channel, code=code)
        return _issued(result)

    async def _failure(self, activity: Activity, wire: Wire) -> Answer:
        """Teams could not get a token silently (consent missing, the resource wrong...):
        logged once, the person told in one sentence, to them alone."""
        value = _value(wire)
        logger.warning("teams: single sign-on failed in Teams (%s)", str(value.get("code"))[:80])
        ref = ConversationRef.from_activity(activity)
        message = activities.message(ref, FAILED_SENTENCE)
        message.pop("replyToId", None)
        try:
            connector = await self._outbound.connector(ref.service_url)
            if ref.is_personal:
                await connector.send(ref.conversation_id, message)
            else:
                await connector.send_targeted(ref.conversation_id, message)
        except ConnectorError as error:
            logger.info("teams: the sign-in failure could not be told (%s)", error)
        return 200, None
