"""``SignIns``: the sign-ins people have started and not finished, and the OAuth ``state``
that brings each one back.

Starting a sign-in (``start``) keeps, sealed in the shared state, everything finishing it
needs: who (person and workspace), which server, the PKCE verifier, the OAuth client, where
to exchange the code, and the question waiting for it (``wait``). The person gets an
authorization URL whose ``state`` is ``<nonce>.<mac>``: a random nonce naming the record, and
a MAC binding it to that person, workspace, server and expiry. The redirect may reach any
process; ``finish`` accepts a state once, before it expires, only when its MAC matches the
record it names, and otherwise refuses (``SignInRefused``) without touching anything: a
forged state names no record, a replayed one was used, a tampered one fails its MAC.

>>> import asyncio
>>> from cryptography.fernet import Fernet
>>> from agent_core.state import MemoryKeyValueStore
>>> from agent_core.mcp.auth.crypto import TokenCipher
>>> sign_ins = SignIns(MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode()))
>>> url, state = asyncio.run(sign_ins.start(
...     person="slack:T1:U1", workspace="T1", server="tickets",
...     authorization_endpoint="https://auth.example/authorize",
...     client={"client_id": "c1"}, redirect_uri="https://bot.example/oauth/mcp/callback"))
>>> asyncio.run(sign_ins.finish(state)).person
'slack:T1:U1'
>>> try:
...     asyncio.run(sign_ins.finish(state))
... except SignInRefused as refused:
...     print(refused)
this sign-in link was used already
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.errors import ThreadlineError
from agent_core.mcp.auth.crypto import TokenCipher
from agent_core.state.keyvalue import KeyValueStore

LIFETIME = 600.0
"""Seconds a person has to finish a sign-in."""

Refusal = Literal["unknown", "used", "expired", "tampered", "declined", "failed"]


REFUSALS: dict[Refusal, str] = {
    "unknown": "this sign-in link is not one the bot started (or it expired)",
    "used": "this sign-in link was used already",
    "expired": "this sign-in link expired; ask your question again for a new one",
    "tampered": "this sign-in link was changed",
    "declined": "the sign-in was declined",
    "failed": "the sign-in could not be finished",
}
"""What a person is told about a sign-in link that finishes nothing."""


class SignInRefused(ThreadlineError):
    """An OAuth callback that finishes nothing; ``reason`` says why (never with a secret).

    >>> SignInRefused("used").reason
    'used'
    """

    def __init__(self, reason: Refusal, detail: str = "") -> None:
        self.reason: Refusal = reason
        self.detail = detail
        super().__init__(REFUSALS[reason])


class WaitingQuestion(BaseModel):
    """The question a sign-in interrupted, answered once the person has connected.

    >>> WaitingQuestion(conversation_id="slack:T1:C1:1.0", question="my tickets?").question
    'my tickets?'
    """

    conversation_id: str
    question: str
    request: dict[str, Any] = Field(default_factory=dict)
    """The channel's metadata of the question (platform, workspace, channel, thread...)."""


class PendingSignIn(BaseModel):
    """One started sign-in, as stored (sealed).

    >>> pending = PendingSignIn(person="p", workspace="w", server="s", verifier="v",
    ...                         redirect_uri="https://b/cb", client={}, expires_at=0)
    >>> pending.binding("n")
    'n|p|w|s|0'
    """

    model_config = ConfigDict(extra="ignore")

    person: str
    workspace: str
    server: str
    verifier: str = Field(repr=False)
    redirect_uri: str
    client: dict[str, Any] = Field(repr=False)
    token_endpoint: str | None = None
    metadata: dict[str, Any] | None = None
    resource: str | None = None
    expires_at: float
    waiting: WaitingQuestion | None = None

    def binding(self, nonce: str) -> str:
        """What the state's MAC covers: the nonce and who, where, what and until when."""
        return "|".join([nonce, self.person, self.workspace, self.server, f"{self.expires_at:.0f}"])


def _challenge(verifier: str) -> str:
    import base64

    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class SignIns:
    """Started sign-ins in a ``KeyValueStore``; see the module docstring.

    >>> from cryptography.fernet import Fernet
    >>> from agent_core.state import MemoryKeyValueStore
    >>> SignIns(MemoryKeyValueStore(), TokenCipher(Fernet.generate_key().decode())).lifetime
    600.0
    """

    def __init__(
        self,
        store: KeyValueStore,
        cipher: TokenCipher,
        *,
        lifetime: float = LIFETIME,
        clock: Callable[[], float] = SYSTEM_CLOCK.now,
    ) -> None:
        self._store = store
        self._cipher = cipher
        self.lifetime = lifetime
        self._clock = clock

    @staticmethod
    def _key(nonce: str) -> str:
        return "mcp:sign_in:" + hashlib.sha256(nonce.encode("utf-8")).hexdigest()[:40]

    async def start(
        self,
        *,
        person: str,
        workspace: str,
        server: str,
        authorization_endpoint: str,
        client: dict[str, Any],
        redirect_uri: str,
        token_endpoint: str | None = None,
        metadata: dict[str, Any] | None = None,
        resource: str | None = None,
        scope: str | None = None,
    ) -> tuple[str, str]:
        """Keep a new sign-in and return ``(authorization_url, state)``."""
        nonce = secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(64)
        pending = PendingSignIn(
            person=person,
            workspace=workspace,
            server=server,
            verifier=verifier,
            redirect_uri=redirect_uri,
            client=client,
            token_endpoint=token_endpoint,
            metadata=metadata,
            resource=resource,
            expires_at=self._clock() + self.lifetime,
        )
        state = f"{nonce}.{self._cipher.sign(pending.binding(nonce))}"
        await self._keep(nonce, pending)
        parameters = {
            "response_type": "code",
            "client_id": str(client.get("client_id", "")),
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
        }
        if resource:
            parameters["resource"] = resource
        if scope:
            parameters["scope"] = scope
        joiner = "&" if "?" in authorization_endpoint else "?"
        return f"{authorization_endpoint}{joiner}{urlencode(parameters)}", state

    async def start_issued(self, *, person: str, workspace: str, server: str) -> str:
        """Keep a new sign-in whose token the channel issues (single sign-on: no
        authorization page, no PKCE) and return its ``state``."""
        nonce = secrets.token_urlsafe(24)
        pending = PendingSignIn(
            person=person,
            workspace=workspace,
            server=server,
            verifier="",
            redirect_uri="",
            client={},
            expires_at=self._clock() + self.lifetime,
        )
        await self._keep(nonce, pending)
        return f"{nonce}.{self._cipher.sign(pending.binding(nonce))}"

    async def _keep(self, nonce: str, pending: PendingSignIn) -> None:
        ttl = max(1.0, pending.expires_at - self._clock())
        await self._store.set(self._key(nonce), self._cipher.seal(pending.model_dump()), ttl=ttl)

    async def wait(self, state: str, waiting: WaitingQuestion) -> None:
        """Remember ``waiting`` as the question to answer once ``state``'s sign-in finishes
        (the latest question wins)."""
        nonce = state.partition(".")[0]
        pending = await self._read(nonce)
        if pending is not None:
            await self._keep(nonce, pending.model_copy(update={"waiting": waiting}))

    async def _read(self, nonce: str) -> PendingSignIn | None:
        opened = self._cipher.open(await self._store.get(self._key(nonce)))
        return PendingSignIn.model_validate(opened) if isinstance(opened, dict) else None

    async def finish(self, state: str) -> PendingSignIn:
        """The sign-in ``state`` names, taken once; ``SignInRefused`` if it names none, was
        taken, expired or does not match its record."""
        nonce, _, mac = state.partition(".")
        if not nonce or not mac or len(state) > 200:
            raise SignInRefused("unknown")
        key = self._key(nonce)
        pending = await self._read(nonce)
        if pending is None:
            used = await self._store.get(f"{key}:used")
            raise SignInRefused("used" if used else "unknown")
        if not self._cipher.signed(pending.binding(nonce), mac):
            raise SignInRefused("tampered")
        if not await self._store.add(f"{key}:used", ttl=self.lifetime):
            raise SignInRefused("used")  # ``add`` is atomic: of two callbacks, one wins
        await self._store.delete(key)
        if pending.expires_at < self._clock():
            raise SignInRefused("expired")
        return pending
