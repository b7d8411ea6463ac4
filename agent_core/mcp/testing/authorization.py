"""``LocalAuthorizationServer``: a small OAuth 2.1 authorization server, for tests and demos.

Built on the ``mcp`` SDK's own authorization-server pieces (``create_auth_routes``: the
metadata, dynamic client registration, ``/authorize`` with PKCE, ``/token``, revocation), it
keeps everything in memory and signs people in with a one-field form (``/login``: type a
name) instead of a real identity provider. It issues short opaque tokens bound to the
person (``subject``) and to the MCP server they are for (``resource``), refreshes and
rotates them, and can be told to let tokens expire (``expire``), so the refresh and "sign in
again" paths can be tested for real. ``verifier()`` is the token verifier of the MCP server it
protects; it records which person each request came as (``seen``), so a test can assert
that every call carried its own person's token.

``sign_in(authorization_url, person)`` plays the browser: it follows the authorization
page, signs in as ``person`` and returns the URL the person would be sent back to (the
bot's ``/oauth/mcp/callback?code=...&state=...``).

>>> server = LocalAuthorizationServer("http://127.0.0.1:9000")
>>> server.issuer, len(server.routes()) > 3
('http://127.0.0.1:9000', True)
"""

from __future__ import annotations

import html
import secrets
import time
from urllib.parse import urljoin

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    TokenVerifier,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

CODE_SECONDS = 300
ISSUER_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
"""Issuers compare as strings: ``http://127.0.0.1:9000``, never with a trailing ``/``."""


class LocalAuthorizationServer:
    """An in-memory OAuth 2.1 authorization server; see the module docstring.

    >>> LocalAuthorizationServer("http://127.0.0.1:9001").scopes
    ['tickets']
    """

    def __init__(
        self,
        issuer: str,
        *,
        access_seconds: int = 3600,
        refresh_seconds: int = 30 * 86400,
        scopes: list[str] | None = None,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.access_seconds = access_seconds
        self.refresh_seconds = refresh_seconds
        self.scopes = scopes or ["tickets"]
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.waiting: dict[str, tuple[str, AuthorizationParams]] = {}
        """Authorization requests waiting for someone to sign in, by request id."""
        self.seen: list[str] = []
        """The person each request to the protected server came as, in order."""
        self.refreshed = 0

    # -- the provider protocol (mcp.server.auth.provider) ------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        request = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.waiting[request] = (client.client_id, params)
        return f"{self.issuer}/login?request={request}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        if code is None or code.client_id != client.client_id or code.expires_at < time.time():
            return None
        return code

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was used already")
        return self._issue(
            authorization_code.client_id,
            authorization_code.scopes,
            authorization_code.subject,
            authorization_code.resource,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            return None
        if token.expires_at is not None and token.expires_at < time.time():
            return None
        return token

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: each refresh token works once
        self.refreshed += 1
        return self._issue(
            refresh_token.client_id,
            scopes or refresh_token.scopes,
            refresh_token.subject,
            refresh_token.resource,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted here")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(
        self, client_id: str, scopes: list[str], subject: str | None, resource: str | None
    ) -> OAuthToken:
        now = int(time.time())
        access = AccessToken(
            token=f"at_{secrets.token_urlsafe(24)}",
            client_id=client_id,
            scopes=scopes,
            expires_at=now + self.access_seconds,
            resource=resource,
            subject=subject,
        )
        refresh = RefreshToken(
            token=f"rt_{secrets.token_urlsafe(24)}",
            client_id=client_id,
            scopes=scopes,
            expires_at=now + self.refresh_seconds,
            resource=resource,
            subject=subject,
        )
        self.access[access.token] = access
        self.refresh[refresh.token] = refresh
        return OAuthToken(
            access_token=access.token,
            token_type="Bearer",
            expires_in=self.access_seconds,
            refresh_token=refresh.token,
            scope=" ".join(scopes),
        )

    # -- what tests do ------------------------------------------------------------------

    def expire(self, *, access: bool = True, refresh: bool = False) -> None:
        """Let every access token (and, with ``refresh``, every refresh token) expire now."""
        past = int(time.time()) - 1
        if access:
            for token in self.access.values():
                token.expires_at = past
        if refresh:
            for kept in self.refresh.values():
                kept.expires_at = past

    def verifier(self) -> TokenVerifier:
        """The protected MCP server's token verifier; records who each request came as."""
        server = self

        class Verifier:
            async def verify_token(self, token: str) -> AccessToken | None:
                found = await server.load_access_token(token)
                if found is not None:
                    server.seen.append(found.subject or "")
                return found

        return Verifier()

    # -- the sign-in page -----------------------------------------------------------------

    def login(self, request: str, person: str) -> str:
        """Sign ``person`` in for the waiting ``request``: the URL they are sent back to."""
        client_id, params = self.waiting.pop(request)
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=params.scopes or self.scopes,
            expires_at=time.time() + CODE_SECONDS,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=person,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(
            str(params.redirect_uri), code=code.code, state=params.state, iss=self.issuer
        )

    async def _login_page(self, request: Request) -> Response:
        if request.method == "GET":
            waiting = html.escape(request.query_params.get("request", ""))
            return HTMLResponse(
                "<form method=post><input type=hidden name=request value='" + waiting + "'>"
                "<label>Your name <input name=person autofocus></label>"
                "<button>Sign in</button></form>"
            )
        form = await request.form()
        waiting, person = str(form.get("request", "")), str(form.get("person", "")).strip()
        if waiting not in self.waiting or not person:
            return HTMLResponse("This sign-in is not waiting (any more).", status_code=400)
        return RedirectResponse(self.login(waiting, person), status_code=302)

    def routes(self) -> list[Route]:
        """The server's routes: the SDK's OAuth endpoints and the sign-in page."""
        routes = create_auth_routes(
            provider=self,
            issuer_url=ISSUER_URL.validate_python(self.issuer),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=self.scopes, default_scopes=self.scopes
            ),
            revocation_options=RevocationOptions(enabled=True),
        )
        return [*routes, Route("/login", self._login_page, methods=["GET", "POST"])]


async def sign_in(authorization_url: str, person: str) -> str:
    """Play the browser: open ``authorization_url``, sign in as ``person``, and return the URL
    the authorization server sends them back to (with ``code`` and ``state``)."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
        page = await browser.get(authorization_url)
        if page.status_code != 302:
            raise RuntimeError(f"the authorization page answered {page.status_code}: {page.text}")
        login = urljoin(authorization_url, page.headers["location"])
        request = login.partition("request=")[2]
        back = await browser.post(
            login.partition("?")[0], data={"request": request, "person": person}
        )
        if back.status_code != 302:
            raise RuntimeError(f"signing in answered {back.status_code}: {back.text}")
        location: str = back.headers["location"]
        return location
