"""Each person's OAuth 2.1 with an MCP server (``auth = "user"``), on the ``mcp`` SDK's client.

``PersonalAuth`` is the SDK's ``OAuthClientProvider`` for one person and one server: it
discovers the server's authorization server (protected-resource metadata, then the
authorization server's metadata), registers the bot as a client once (dynamic client
registration, shared by everyone), signs every request with the person's access token,
refreshes it when it expires and keeps what it gets in the person's sealed record
(``TokenVault``). Only one step differs from the SDK's desktop flow: where the SDK would
open a browser and wait for the redirect in the same process, a chat bot cannot wait, so
``_perform_authorization`` keeps the sign-in (``SignIns``) and stops with
``SignInRequired`` carrying the authorization URL, which the person alone is shown as a
"Connect" button. The redirect reaches the bot's ``/oauth/mcp/callback`` (any process), and
``finish_sign_in`` exchanges the code (PKCE) for the person's tokens.

An access token the server refuses early (revoked, or expired on the server's clock first) is
refreshed before anything else is tried; when a refresh is refused (the refresh token expired
or was revoked), the person's record is dropped and they are asked to connect again, once.

Tokens never reach a log: the SDK's OAuth logger is kept from printing the flow's stop as an
error (``_QuietSignIn``), and nothing here formats a token.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import handle_token_response_scopes, validate_authorization_response_iss
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata

from agent_core.clock import SYSTEM_CLOCK
from agent_core.mcp.auth.signin import PendingSignIn, SignInRefused, SignIns
from agent_core.mcp.auth.vault import Connection, TokenVault
from agent_core.mcp.config import McpServerConfig, secure_url
from agent_core.mcp.errors import McpCallError, SignInRequired

if TYPE_CHECKING:
    from pydantic import AnyUrl

CLIENT_NAME = "Threadline"
LINK_MARGIN = 30.0
"""Seconds before its sign-in expires that a link is no longer shown (time to click it)."""

logger = logging.getLogger(__name__)


class _QuietSignIn(logging.Filter):
    """Keeps the SDK's "OAuth flow error" traceback out of the log when the flow stopped only
    because a person must sign in, or a refresh was refused (the bot's normal path, not an
    error: the person is asked to connect, and that is logged once, by the bot)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from mcp.client.auth.exceptions import OAuthTokenError

        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, SignInRequired | OAuthTokenError)


_QUIET = _QuietSignIn()


def _base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def client_metadata(server: McpServerConfig, redirect_uri: str) -> OAuthClientMetadata:
    """What the bot registers as, with ``server``'s authorization server."""
    uri: AnyUrl = redirect_uri  # type: ignore[assignment]  # validated by pydantic
    return OAuthClientMetadata(
        redirect_uris=[uri],
        client_name=CLIENT_NAME,
        scope=" ".join(server.scopes) or None,
        application_type="web",
    )


class PersonalAuth(OAuthClientProvider):
    """One person's OAuth with one server; see the module docstring."""

    def __init__(
        self,
        server: McpServerConfig,
        *,
        person: str,
        workspace: str,
        vault: TokenVault,
        sign_ins: SignIns,
        redirect_uri: str,
    ) -> None:
        assert server.url is not None, "auth = 'user' is for url servers"
        self._tokens = vault.storage(person, server.name)
        super().__init__(
            server_url=server.url,
            client_metadata=client_metadata(server, redirect_uri),
            storage=self._tokens,
        )
        self._server = server
        self._person = person
        self._workspace = workspace
        self._vault = vault
        self._sign_ins = sign_ins
        self.pending: SignInRequired | None = None
        """Set when this person must sign in (again) before the server can be used."""
        self._refreshing = False
        """A refresh was tried for a refused token, and has not worked yet."""
        logging.getLogger("mcp.client.auth.oauth2").addFilter(_QUIET)

    def __repr__(self) -> str:
        return f"PersonalAuth(server={self._server.name!r})"

    def pending_sign_in(self) -> SignInRequired | None:
        """The sign-in this person was sent to, while its link still works."""
        if self.pending is not None and not self.pending.usable(SYSTEM_CLOCK.now()):
            self.pending = None
        return self.pending

    async def _initialize(self) -> None:
        """Load the person's tokens, and when they expire and where they are refreshed (the
        SDK alone would only learn both in the process that signed them in)."""
        await super()._initialize()
        record = await self._tokens.record()
        if record is None:
            return
        self.context.token_expiry_time = record.expires_at
        if record.metadata is not None:
            self.context.oauth_metadata = OAuthMetadata.model_validate(record.metadata)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self.context.is_token_valid():
            await self._initialize()  # another process may have refreshed them meanwhile
        from mcp.client.auth.exceptions import OAuthTokenError

        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            self._refreshing = False
            return
        except OAuthTokenError:
            if not self._refreshing:
                raise
            logger.info(
                "mcp: a refresh for %s was refused; asking to connect again", self._server.name
            )
            self.context.clear_tokens()
            await self._sign_in()
        finally:
            await flow.aclose()

    async def _perform_authorization(self) -> httpx2.Request:
        """A refused token is refreshed first (the request returned is the refresh, whose
        answer the SDK keeps); else keep the sign-in and stop: the person finishes it in
        their browser."""
        if self.context.can_refresh_token() and not self._refreshing:
            self._refreshing = True
            return await self._refresh_token()
        self._refreshing = False
        await self._sign_in()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _sign_in(self) -> None:
        """Keep a new sign-in for the person and stop with ``SignInRequired``."""
        context = self.context
        if context.client_info is None:
            raise SignInRequired(self._server.name, reason="no OAuth client registration")
        metadata = context.oauth_metadata
        assert self._server.url is not None
        base = _base(str(context.auth_server_url or self._server.url))
        endpoint = str(metadata.authorization_endpoint) if metadata else urljoin(base, "/authorize")
        token = str(metadata.token_endpoint) if metadata else urljoin(base, "/token")
        insecure = [url for url in (endpoint, token) if not secure_url(url)]
        if insecure:  # people are sent there with a code, and the code is sent there
            raise McpCallError(
                self._server.name,
                "its authorization server's endpoints must be https (http only on this "
                f"machine), nobody is sent to {insecure[0][:200]!r}",
            )
        include = context.should_include_resource_param(context.protocol_version)
        await self._vault.delete(self._person, self._server.name)
        url, state = await self._sign_ins.start(
            person=self._person,
            workspace=self._workspace,
            server=self._server.name,
            authorization_endpoint=endpoint,
            client=context.client_info.model_dump(mode="json", exclude_none=True),
            redirect_uri=str(context.client_metadata.redirect_uris[0]),  # type: ignore[index]
            token_endpoint=token,
            metadata=metadata.model_dump(mode="json", exclude_none=True) if metadata else None,
            resource=context.get_resource_url() if include else None,
            scope=context.client_metadata.scope,
        )
        expires_at = SYSTEM_CLOCK.now() + self._sign_ins.lifetime - LINK_MARGIN
        self.pending = SignInRequired(self._server.name, url, state=state, expires_at=expires_at)
        raise self.pending


async def finish_sign_in(
    pending: PendingSignIn, code: str, iss: str | None, *, http: httpx2.AsyncClient
) -> Connection:
    """Exchange the authorization ``code`` (with the sign-in's PKCE verifier) for the
    person's tokens; ``SignInRefused("failed")`` when the authorization server refuses."""
    from mcp.client.auth.exceptions import OAuthFlowError, OAuthTokenError

    client = OAuthClientInformationFull.model_validate(pending.client)
    metadata = OAuthMetadata.model_validate(pending.metadata) if pending.metadata else None
    try:
        validate_authorization_response_iss(iss, metadata)
    except OAuthFlowError as wrong:
        raise SignInRefused("failed", "the authorization server's iss did not match") from wrong
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "client_id": client.client_id or "",
        "code_verifier": pending.verifier,
    }
    if pending.resource:
        data["resource"] = pending.resource
    context = _token_context(pending, client)
    data, headers = context.prepare_token_auth(data, {"Content-Type": _FORM})
    endpoint = pending.token_endpoint or urljoin(pending.redirect_uri, "/token")
    try:
        response = await http.post(endpoint, data=data, headers=headers)
        if response.status_code not in (200, 201):
            raise SignInRefused("failed", f"the token endpoint answered {response.status_code}")
        token = await handle_token_response_scopes(response)
    except (httpx2.HTTPError, OAuthTokenError) as failed:
        raise SignInRefused("failed", type(failed).__name__) from None
    expires_at = SYSTEM_CLOCK.now() + token.expires_in if token.expires_in else None
    return Connection(
        tokens=token.model_dump(mode="json", exclude_none=True),
        expires_at=expires_at,
        client=pending.client,
        metadata=pending.metadata,
    )


_FORM = "application/x-www-form-urlencoded"


def _token_context(pending: PendingSignIn, client: OAuthClientInformationFull) -> OAuthContext:
    """The SDK's OAuth context, only to authenticate the token request as the client."""
    context = OAuthContext(
        server_url=pending.redirect_uri,
        client_metadata=OAuthClientMetadata(redirect_uris=client.redirect_uris),
        storage=_NoStorage(),
        redirect_handler=None,
        callback_handler=None,
    )
    context.client_info = client
    return context


class _NoStorage:
    """``TokenStorage`` for a context that stores nothing (the caller keeps the tokens)."""

    async def get_tokens(self) -> Any:
        return None

    async def set_tokens(self, tokens: Any) -> None:
        return None

    async def get_client_info(self) -> Any:
        return None

    async def set_client_info(self, client_info: Any) -> None:
        return None
