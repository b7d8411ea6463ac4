"""``SigningKeys``: the keys the Bot Framework signs inbound tokens with, fetched and kept.

An issuer publishes its keys at an OpenID metadata URL (``.../openidconfiguration`` names
its ``jwks_uri``). They are fetched with aiohttp, never on a thread or with a blocking
client, at startup (``refresh``) and again when they are a day old; a token naming a key
that is not known triggers at most one refetch per ``miss_refresh`` (keys rotate), and then
is refused (``Unauthenticated``), so unknown key ids cannot make the bot hammer the issuer.
While no key could ever be fetched, a token cannot be checked at all: ``KeysUnavailable``
(the request is answered 503, so the Bot Framework delivers it again).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from agent_core.errors import PlatformCallFailed, Unauthenticated

log = logging.getLogger(__name__)

DAY = 24 * 3600.0


class KeysUnavailable(PlatformCallFailed):
    """No signing key could be fetched from the issuer yet: no token can be checked."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One published key: the public key, and the channels that endorse it (a token for an
    activity of ``msteams`` must be signed by a key that lists ``msteams``).

    >>> SigningKey(public_key=None, endorsements=("msteams",)).endorses("msteams")
    True
    """

    public_key: Any
    endorsements: tuple[str, ...] = field(default_factory=tuple)

    def endorses(self, channel_id: str) -> bool:
        """Whether the key may sign for ``channel_id`` (a key listing no channels, or an
        activity naming none, makes no claim either way)."""
        return not channel_id or not self.endorsements or channel_id in self.endorsements


class SigningKeys:
    """The keys published at one OpenID metadata ``url``; see the module docstring.

    >>> SigningKeys("https://login.botframework.com/v1/.well-known/openidconfiguration").loaded
    0
    """

    def __init__(
        self,
        url: str,
        *,
        max_age: float = DAY,
        miss_refresh: float = 300.0,
        timeout: float = 10.0,
        clock: Any = time.monotonic,
    ) -> None:
        self.url = url
        self._max_age = max_age
        self._miss_refresh = miss_refresh
        self._timeout = timeout
        self._clock = clock
        self._keys: dict[str, SigningKey] = {}
        self.fetched_at: float | None = None
        """When the keys were last fetched (``clock`` seconds); None before the first time."""
        self._lock = asyncio.Lock()

    @property
    def loaded(self) -> int:
        """How many keys are known now."""
        return len(self._keys)

    async def get(self, key_id: str) -> SigningKey:
        """The key ``key_id``; ``Unauthenticated`` when the issuer does not publish it."""
        if self._older_than(self._max_age):
            await self._refresh_if_older_than(self._max_age)
        key = self._keys.get(key_id)
        if key is None and self._older_than(self._miss_refresh):
            await self._refresh_if_older_than(self._miss_refresh)
            key = self._keys.get(key_id)
        if key is None:
            raise Unauthenticated(f"the token is signed with an unknown key ({key_id[:40]!r})")
        return key

    async def refresh(self) -> None:
        """Fetch the keys now (raises ``aiohttp.ClientError`` / ``TimeoutError`` /
        ``ValueError`` when the issuer cannot be read)."""
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            metadata = await _json(session, self.url)
            keys = await _json(session, str(metadata["jwks_uri"]))
        self._keys = _signing_keys(keys.get("keys") or [])
        self.fetched_at = self._clock()
        log.info("teams: %d token signing keys from %s", len(self._keys), self.url)

    def _older_than(self, seconds: float) -> bool:
        return self.fetched_at is None or self._clock() - self.fetched_at > seconds

    async def _refresh_if_older_than(self, seconds: float) -> None:
        async with self._lock:  # one fetch for every request that waits on it
            if not self._older_than(seconds):
                return
            try:
                await self.refresh()
            except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as error:
                log.warning("teams: signing keys not fetched from %s (%s)", self.url, error)
                if not self._keys:
                    raise KeysUnavailable(f"no signing keys from {self.url}") from error
                self.fetched_at = self._clock()  # keep the keys known; try again later


async def _json(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url) as response:
        response.raise_for_status()
        body = await response.json(content_type=None)
    if not isinstance(body, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return body


def _signing_keys(published: list[Any]) -> dict[str, SigningKey]:
    from jwt.algorithms import RSAAlgorithm

    keys = {}
    for jwk in published:
        if isinstance(jwk, dict) and jwk.get("kid") and jwk.get("kty") == "RSA":
            endorsements = tuple(str(e) for e in jwk.get("endorsements") or [])
            public_key = RSAAlgorithm.from_jwk(json.dumps(jwk))
            keys[str(jwk["kid"])] = SigningKey(public_key, endorsements)
    return keys
