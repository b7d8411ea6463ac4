"""``IssuedTokenAuth``: a person's token for an MCP server, issued by the channel itself.

Some servers (``auth = "user"``) trust the same identity provider as the channel: an MCP
server protected by Entra, reached from Teams. There the person need not visit an
authorization page: the channel's single sign-on (Teams' token exchange at the Bot
Framework token service) hands the bot their token for the server. This auth signs each
request with the token kept in the person's sealed record (``TokenVault``, as a normal
sign-in keeps it). With no usable token (none yet, expired, or refused by the server with
401) it keeps a sign-in (``SignIns.start_issued``: bound to the person, the workspace and
the server, taken once) and stops with ``SignInRequired(single_sign_on=True)``; the channel
finishes it (``McpHub.finish_issued``) and the waiting question is asked again.

Refreshing is the channel's: its token service keeps the person's refresh token, so an
expired token is asked of it again (``renew``: Teams' ``GetToken``), and only when that
fails is the person asked (another silent exchange). The bot never holds a refresh token.
Tokens are never logged and never part of a ``repr``.

>>> import asyncio
>>> from cryptography.fernet import Fernet
>>> from agent_core.state import MemoryKeyValueStore
>>> from agent_core.mcp.auth.crypto import TokenCipher
>>> from agent_core.mcp.auth.signin import SignIns
>>> from agent_core.mcp.auth.vault import TokenVault
>>> from agent_core.mcp.config import McpServerConfig
>>> store, cipher = MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode())
>>> server = McpServerConfig(name="files", url="https://files.contoso.com/mcp", auth="user")
>>> IssuedTokenAuth(server, person="teams:t:a", workspace="t",
...                 vault=TokenVault(store, cipher), sign_ins=SignIns(store, cipher))
IssuedTokenAuth(server='files')
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx2

from agent_core.clock import SYSTEM_CLOCK
from agent_core.mcp.auth.signin import SignIns
from agent_core.mcp.auth.vault import TokenVault
from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.errors import SignInRequired

Renew = Callable[[str, str], Awaitable[tuple[str, float | None] | None]]
"""The channel's fresh token for (person, server) and when it expires; None: it has none."""

EXPIRY_MARGIN = 60.0
"""Seconds before it expires that a token is no longer sent (a call may take that long)."""


class IssuedTokenAuth(httpx2.Auth):
    """One person's channel-issued token for one server; see the module docstring."""

    def __init__(
        self,
        server: McpServerConfig,
        *,
        person: str,
        workspace: str,
        vault: TokenVault,
        sign_ins: SignIns,
        renew: Renew | None = None,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._server = server
        self._renew = renew
        self._person = person
        self._workspace = workspace
        self._vault = vault
        self._sign_ins = sign_ins
        self._clock = clock
        self.pending: SignInRequired | None = None
        """Set when this person's channel must issue them a token (again)."""

    def __repr__(self) -> str:
        return f"IssuedTokenAuth(server={self._server.name!r})"

    def pending_sign_in(self) -> SignInRequired | None:
        """The sign-in this person was asked for, while it still can be finished."""
        if self.pending is not None and not self.pending.usable(self._clock()):
            self.pending = None
        return self.pending

    async def _token(self) -> str | None:
        record = await self._vault.get(self._person, self._server.name)
        if record is None:
            return None
        if record.expires_at is not None and record.expires_at - EXPIRY_MARGIN < self._clock():
            return await self._renewed()
        return record.access_token

    async def _renewed(self) -> str | None:
        """A fresh token from the channel, kept sealed in place of the expired one."""
        if self._renew is None:
            return None
        from agent_core.mcp.auth.vault import Connection

        fresh = await self._renew(self._person, self._server.name)
        if fresh is None:
            return None
        token, expires_at = fresh
        tokens = {"access_token": token, "token_type": "Bearer"}
        connection = Connection(tokens=tokens, expires_at=expires_at)
        await self._vault.put(self._person, self._server.name, connection)
        return token

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._token()
        if token is None:
            await self._sign_in()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:  # revoked, or expired on the server's clock first
            await self._sign_in()

    async def _sign_in(self) -> None:
        """Forget the person's token, keep a new sign-in, stop with ``SignInRequired``."""
        await self._vault.delete(self._person, self._server.name)
        state = await self._sign_ins.start_issued(
            person=self._person, workspace=self._workspace, server=self._server.name
        )
        expires_at = self._clock() + self._sign_ins.lifetime
        self.pending = SignInRequired(
            self._server.name, "", state=state, expires_at=expires_at, single_sign_on=True
        )
        raise self.pending
