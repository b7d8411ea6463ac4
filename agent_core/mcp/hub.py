"""``McpHub``: every MCP server of one process, and the people's sign-ins to them.

A bot builds one hub from its configuration, gives each agent the servers it uses
(``attach``: a ``ToolSource`` for the agent's registry and the ``/connections`` and
``/disconnect`` commands), sends the OAuth redirect to ``finish_sign_in``, lists the servers
for ``threadline doctor`` (``status``) and closes it with the bot (``aclose``)::

    hub = McpHub(servers, store=state.cache, token_key=key, callback_url=url)
    attach(agent, hub, servers)
    ...
    signed_in = await hub.finish_sign_in(state=..., code=..., iss=...)  # the callback
    await hub.aclose()

People's tokens and started sign-ins live in ``store`` (the bot's shared state), encrypted
with ``token_key``; without both, a server with ``auth = "user"`` is refused at once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent_core.mcp.auth.signin import SignInRefused, WaitingQuestion
from agent_core.mcp.backoff import Backoff
from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.connection import McpConnection
from agent_core.mcp.errors import SignInRequired, require_sdk
from agent_core.mcp.pool import McpConnections
from agent_core.mcp.source import McpToolSource

if TYPE_CHECKING:
    import httpx2

    from agent_core.mcp.auth.issued import Renew
    from agent_core.mcp.auth.signin import SignIns
    from agent_core.mcp.auth.vault import TokenVault
    from agent_core.state.keyvalue import KeyValueStore
    from agent_core.users import User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SignedIn:
    """A finished sign-in: who connected which server, and the question that waited.

    >>> SignedIn("slack:T1:U1", "T1", "tickets", None).server
    'tickets'
    """

    person: str
    workspace: str
    server: str
    waiting: WaitingQuestion | None


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``threadline doctor`` lists it.

    >>> ServerStatus("files", "stdio", "none", "up", 3, "").tools
    3
    """

    name: str
    transport: str
    auth: str
    state: Literal["up", "down", "per person"]
    tools: int | None
    detail: str


class McpHub:
    """The process's MCP servers and sign-ins; see the module docstring.

    >>> hub = McpHub([McpServerConfig(name="files", command="files-mcp")])
    >>> sorted(hub.servers), hub.vault is None
    (['files'], True)
    """

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        store: KeyValueStore | None = None,
        token_key: str | None = None,
        callback_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        backoff: Callable[[], Backoff] = Backoff,
        max_personal: int = 256,
    ) -> None:
        require_sdk()
        self.servers = {server.name: server for server in servers}
        self.catalog: dict[str, frozenset[str]] = {}
        self._environ = os.environ if environ is None else environ
        self.callback_url = callback_url
        self.vault: TokenVault | None = None
        self.sign_ins: SignIns | None = None
        personal = [s.name for s in servers if s.auth == "user"]
        if personal:
            if store is None or token_key is None:
                raise ValueError(
                    f"{personal[0]} signs each person in (auth = 'user'): it needs the shared "
                    "state and mcp_token_key"
                )
            from agent_core.mcp.auth.crypto import TokenCipher
            from agent_core.mcp.auth.signin import SignIns
            from agent_core.mcp.auth.vault import TokenVault

            cipher = TokenCipher(token_key)
            self.vault = TokenVault(store, cipher)
            self.sign_ins = SignIns(store, cipher)
        self.connections = McpConnections(
            servers,
            personal=self._personal if personal else None,
            environ=self._environ,
            backoff=backoff,
            max_personal=max_personal,
        )
        self._http: httpx2.AsyncClient | None = None
        self._watchers: list[Callable[[str], None]] = []
        self.issued: frozenset[str] = frozenset()
        """Servers whose people's tokens the channel issues (``issue_tokens_for``)."""
        self._renew: Renew | None = None

    def issue_tokens_for(self, names: Sequence[str], *, renew: Renew | None = None) -> None:
        """People's tokens for the servers ``names`` come from the channel's single sign-on
        (Teams), not from a sign-in page (``IssuedTokenAuth``); they must sign each person
        in (``auth = "user"``). ``renew`` asks the channel for a fresh token."""
        for name in names:
            server = self.servers.get(name)
            if server is None or server.auth != "user":
                raise ValueError(f"single sign-on is for auth = 'user' servers, not {name!r}")
        self.issued = frozenset(names)
        self._renew = renew

    # -- sessions (McpSessions) -----------------------------------------------------------

    def _personal(self, server: McpServerConfig, person: str, workspace: str) -> McpConnection:
        from agent_core.mcp.auth.oauth import PersonalAuth

        assert self.vault is not None and self.sign_ins is not None
        if server.name in self.issued:
            from agent_core.mcp.auth.issued import IssuedTokenAuth

            issued = IssuedTokenAuth(
                server,
                person=person,
                workspace=workspace,
                vault=self.vault,
                sign_ins=self.sign_ins,
                renew=self._renew,
            )
            return McpConnection(
                server, auth=issued, pending_sign_in=issued.pending_sign_in, environ=self._environ
            )
        if self.callback_url is None:  # the terminal chat: no page to come back to
            return McpConnection(
                server, environ=self._environ, pending_sign_in=_no_callback(server)
            )
        auth = PersonalAuth(
            server,
            person=person,
            workspace=workspace,
            vault=self.vault,
            sign_ins=self.sign_ins,
            redirect_uri=self.callback_url,
        )
        return McpConnection(
            server, auth=auth, pending_sign_in=auth.pending_sign_in, environ=self._environ
        )

    def session(self, server: McpServerConfig, user: User, workspace: str) -> McpConnection:
        if server.auth == "user":
            return self.connections.personal(server.name, user.id, workspace)
        return self.connections.shared(server.name)

    async def connected(self, server: McpServerConfig, user: User) -> bool:
        """Whether ``user`` has connected ``server`` (here or in another process)."""
        if self.vault is None:
            return False
        if await self.vault.get(user.id, server.name) is None:
            return False
        session = self.connections.existing(server.name, user.id)
        if session is not None and session.state == "signed_out":  # connected since, maybe
            self.connections.forget(server.name, user.id)  # in another process
        return True

    async def secrets(self, server: McpServerConfig, user: User) -> list[str]:
        found = server.secrets(self._environ)
        if server.auth == "user" and self.vault is not None:
            record = await self.vault.get(user.id, server.name)
            if record is not None:
                found += [v for k, v in record.tokens.items() if k.endswith("token") and v]
        return found

    async def waiting(self, state: str, question: WaitingQuestion) -> None:
        if self.sign_ins is not None:
            await self.sign_ins.wait(state, question)

    def source(self, names: Sequence[str] | None = None) -> McpToolSource:
        """A tool source of the servers ``names`` (all of them by default)."""
        chosen = list(self.servers) if names is None else list(names)
        return McpToolSource(self, [self.servers[name] for name in chosen])

    def watch(self, watcher: Callable[[str], None]) -> None:
        """Tell ``watcher`` the person (``User.id``) of each connection made or removed here
        (synchronous: it notes, never waits; a channel's home of that person)."""
        self._watchers.append(watcher)

    def _changed(self, person: str) -> None:
        for watcher in self._watchers:
            watcher(person)

    # -- people's sign-ins ----------------------------------------------------------------

    async def finish_sign_in(
        self, *, state: str, code: str | None, iss: str | None = None, error: str | None = None
    ) -> SignedIn:
        """What the OAuth redirect brings back: the sign-in ``state`` names (once, before it
        expires, as bound), its ``code`` exchanged for the person's tokens, kept sealed.
        Raises ``SignInRefused`` (forged, replayed, expired, declined, refused)."""
        from agent_core.mcp.auth.oauth import finish_sign_in

        if self.sign_ins is None or self.vault is None:
            raise SignInRefused("unknown")
        pending = await self.sign_ins.finish(state)
        server = self.servers.get(pending.server)
        if server is None or server.auth != "user":
            raise SignInRefused("unknown")
        try:
            if error is not None:
                raise SignInRefused("declined")
            if not code:
                raise SignInRefused("failed", "no code")
            connection = await finish_sign_in(pending, code, iss, http=self._client())
        except SignInRefused:  # its link is used up: the person's next question gets a new one
            self.connections.forget(pending.server, pending.person)
            raise
        await self.vault.put(pending.person, pending.server, connection)
        self.connections.forget(pending.server, pending.person)
        logger.info("mcp: a person connected %s", pending.server)
        self._changed(pending.person)
        return SignedIn(pending.person, pending.workspace, pending.server, pending.waiting)

    async def finish_issued(
        self, *, state: str, person: str, token: str, expires_at: float | None
    ) -> SignedIn:
        """A token the channel issued (single sign-on) finishes the sign-in ``state`` names
        (once, before it expires, as bound, and only for ``person``), kept sealed.
        Raises ``SignInRefused``."""
        from agent_core.mcp.auth.vault import Connection

        if self.sign_ins is None or self.vault is None:
            raise SignInRefused("unknown")
        pending = await self.sign_ins.finish(state)
        if pending.person != person or pending.server not in self.issued:
            raise SignInRefused("tampered")
        tokens = {"access_token": token, "token_type": "Bearer"}
        await self.vault.put(
            person, pending.server, Connection(tokens=tokens, expires_at=expires_at)
        )
        self.connections.forget(pending.server, pending.person)
        logger.info("mcp: a person connected %s (single sign-on)", pending.server)
        return SignedIn(pending.person, pending.workspace, pending.server, pending.waiting)

    def _client(self) -> httpx2.AsyncClient:
        import httpx2

        if self._http is None:
            self._http = httpx2.AsyncClient(timeout=15, follow_redirects=False)
        return self._http

    async def connections_of(self, person: str, names: Sequence[str] | None = None) -> list[str]:
        """The servers (among ``names``) ``person`` has connected."""
        personal = [n for n in names or self.servers if self.servers[n].auth == "user"]
        if self.vault is None:
            return []
        return await self.vault.connected(person, personal)

    async def disconnect(self, person: str, server: str) -> bool:
        """Forget ``person``'s tokens for ``server`` (and end their session); whether there
        were any."""
        if self.vault is None or await self.vault.get(person, server) is None:
            return False
        await self.vault.delete(person, server)
        self.connections.forget(server, person)
        self._changed(person)
        return True

    # -- the process --------------------------------------------------------------------

    async def status(self) -> list[ServerStatus]:
        """Each server: reachable or not, how many tools, how people sign in."""
        rows = []
        for server in self.servers.values():
            if server.auth == "user":
                rows.append(_row(server, "per person", None, "each person connects their own"))
                continue
            connection = self.connections.shared(server.name)
            try:
                tools = await connection.tools()
            except Exception as failed:  # doctor reports; it never raises
                rows.append(_row(server, "down", None, str(failed)))
            else:
                rows.append(_row(server, "up", len(tools), ""))
        return rows

    async def aclose(self) -> None:
        """End every session (stdio servers stopped and reaped) and the HTTP client."""
        await self.connections.aclose()
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _no_callback(server: McpServerConfig) -> Callable[[], SignInRequired | None]:
    """A person's session where no sign-in can come back (the terminal chat)."""
    refusal = SignInRequired(
        server.name, reason="people sign in from the console (threadline dev) or a channel"
    )
    return lambda: refusal


def _row(server: McpServerConfig, state: Any, tools: int | None, detail: str) -> ServerStatus:
    auth = {"none": "none", "service": "service token", "user": "each person's own"}[server.auth]
    return ServerStatus(server.name, server.transport, auth, state, tools, detail)
