"""``TokenVault``: each person's tokens for each MCP server, encrypted in the shared state.

A person's record holds what their calls need and nothing else: their OAuth tokens, when the
access token expires, the OAuth client they were issued to, and the authorization server's
metadata (where to refresh). It lives in the bot's ``KeyValueStore`` (SQLite or Redis, so
every process sees it), sealed with ``TokenCipher``: the store never holds a token in the
clear, and its keys carry a hash of the person, not their id. A record no key opens reads
as absent (the person connects again). ``PersonTokens`` is the SDK's ``TokenStorage`` over
one person's record, so the SDK's OAuth client refreshes and keeps their tokens here.

Tokens are never logged and never part of a ``repr``.

>>> import asyncio
>>> from cryptography.fernet import Fernet
>>> from agent_core.state import MemoryKeyValueStore
>>> from agent_core.mcp.auth.crypto import TokenCipher
>>> vault = TokenVault(MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode()))
>>> record = Connection(tokens={"access_token": "at-1", "token_type": "Bearer"})
>>> asyncio.run(vault.put("slack:T1:U1", "tickets", record))
>>> asyncio.run(vault.get("slack:T1:U1", "tickets")).access_token
'at-1'
>>> asyncio.run(vault.get("slack:T1:U2", "tickets")) is None
True
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.mcp.auth.crypto import TokenCipher
from agent_core.state.keyvalue import KeyValueStore

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken


def person_key(person: str) -> str:
    """A stable, opaque stand-in for a person's id in storage keys.

    >>> person_key("slack:T1:U1") == person_key("slack:T1:U1"), len(person_key("x"))
    (True, 32)
    """
    return hashlib.sha256(person.encode("utf-8")).hexdigest()[:32]


class Connection(BaseModel):
    """One person's connection to one server, as stored (sealed).

    >>> Connection(tokens={"access_token": "secret"})
    Connection(expires_at=None, metadata=None, connected_at=...)
    """

    model_config = ConfigDict(extra="ignore")

    tokens: dict[str, Any] = Field(repr=False)
    """The ``OAuthToken`` as the authorization server issued it (refreshed in place)."""
    expires_at: float | None = None
    """When the access token expires (epoch seconds), if the server said."""
    client: dict[str, Any] | None = Field(None, repr=False)
    """The OAuth client (``OAuthClientInformationFull``) the tokens were issued to."""
    metadata: dict[str, Any] | None = None
    """The authorization server's metadata (``OAuthMetadata``): where to refresh."""
    connected_at: float = Field(default_factory=SYSTEM_CLOCK.now)

    @property
    def access_token(self) -> str | None:
        token = self.tokens.get("access_token")
        return token if isinstance(token, str) else None


class TokenVault:
    """People's sealed connections in a ``KeyValueStore``; see the module docstring.

    >>> import asyncio
    >>> from cryptography.fernet import Fernet
    >>> from agent_core.state import MemoryKeyValueStore
    >>> vault = TokenVault(MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode()))
    >>> asyncio.run(vault.connected("slack:T1:U1", ["tickets"]))
    []
    """

    def __init__(self, store: KeyValueStore, cipher: TokenCipher) -> None:
        self._store = store
        self._cipher = cipher

    @staticmethod
    def _key(person: str, server: str) -> str:
        return f"mcp:token:{server}:{person_key(person)}"

    async def get(self, person: str, server: str) -> Connection | None:
        opened = self._cipher.open(await self._store.get(self._key(person, server)))
        if not isinstance(opened, dict):
            return None
        return Connection.model_validate(opened)

    async def put(self, person: str, server: str, connection: Connection) -> None:
        sealed = self._cipher.seal(connection.model_dump(mode="json"))
        await self._store.set(self._key(person, server), sealed)

    async def delete(self, person: str, server: str) -> None:
        await self._store.delete(self._key(person, server))

    async def client(self, server: str) -> dict[str, Any] | None:
        """The bot's own registration with ``server``'s authorization server (one OAuth
        client for everyone; each person authorizes it for themselves)."""
        opened = self._cipher.open(await self._store.get(f"mcp:client:{server}"))
        return opened if isinstance(opened, dict) else None

    async def set_client(self, server: str, client: dict[str, Any]) -> None:
        await self._store.set(f"mcp:client:{server}", self._cipher.seal(client))

    async def connected(self, person: str, servers: list[str]) -> list[str]:
        """Which of ``servers`` ``person`` has connected."""
        return [server for server in servers if await self.get(person, server) is not None]

    def storage(self, person: str, server: str) -> PersonTokens:
        return PersonTokens(self, person, server)


class PersonTokens:
    """The SDK's ``TokenStorage`` over one person's record for one server.

    >>> from cryptography.fernet import Fernet
    >>> from agent_core.state import MemoryKeyValueStore
    >>> vault = TokenVault(MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode()))
    >>> vault.storage("slack:T1:U1", "tickets")
    PersonTokens(server='tickets')
    """

    def __init__(self, vault: TokenVault, person: str, server: str) -> None:
        self._vault = vault
        self.person = person
        self.server = server

    def __repr__(self) -> str:
        return f"PersonTokens(server={self.server!r})"

    async def record(self) -> Connection | None:
        return await self._vault.get(self.person, self.server)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        record = await self.record()
        return None if record is None else OAuthToken.model_validate(record.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self.record()
        expires_at = SYSTEM_CLOCK.now() + tokens.expires_in if tokens.expires_in else None
        dumped = tokens.model_dump(mode="json", exclude_none=True)
        if record is None:
            record = Connection(tokens=dumped, expires_at=expires_at)
        else:
            record = record.model_copy(update={"tokens": dumped, "expires_at": expires_at})
        await self._vault.put(self.person, self.server, record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        record = await self.record()
        client = record.client if record is not None else None
        if client is None:
            client = await self._vault.client(self.server)
        return None if client is None else OAuthClientInformationFull.model_validate(client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        client = client_info.model_dump(mode="json", exclude_none=True)
        await self._vault.set_client(self.server, client)
        record = await self.record()
        if record is not None:
            await self._vault.put(
                self.person, self.server, record.model_copy(update={"client": client})
            )

    async def metadata(self) -> OAuthMetadata | None:
        from mcp.shared.auth import OAuthMetadata

        record = await self.record()
        if record is None or record.metadata is None:
            return None
        return OAuthMetadata.model_validate(record.metadata)
