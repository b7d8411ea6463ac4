"""``TokenCipher``: people's MCP tokens, encrypted at rest with the configured key.

Fernet (AES-128-CBC with HMAC-SHA256, from ``cryptography``): a stored value can neither be
read nor altered without the key. ``mcp_token_key`` may list several keys, comma-separated,
to rotate them: the first encrypts, every one decrypts (``MultiFernet``). A value no key
opens (its key was rotated away, or it was tampered with) reads as absent: the person is
asked to connect again.

>>> from cryptography.fernet import Fernet
>>> cipher = TokenCipher(Fernet.generate_key().decode())
>>> sealed = cipher.seal({"access_token": "secret"})
>>> "secret" in sealed, cipher.open(sealed)
(False, {'access_token': 'secret'})
>>> TokenCipher(Fernet.generate_key().decode()).open(sealed) is None
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any


def _keys(text: str) -> list[str]:
    return [key.strip() for key in text.split(",") if key.strip()]


def key_problem(text: str) -> str | None:
    """What is wrong with ``mcp_token_key`` (``None``: nothing), never echoing it.

    >>> key_problem("hunter2")
    'mcp_token_key is not a Fernet key (32 url-safe base64-encoded bytes)'
    """
    try:
        from cryptography.fernet import Fernet
    except ImportError:  # the missing extra is reported on its own
        return None
    keys = _keys(text)
    if not keys:
        return "mcp_token_key is empty"
    for key in keys:
        try:
            Fernet(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            return "mcp_token_key is not a Fernet key (32 url-safe base64-encoded bytes)"
    return None


class TokenCipher:
    """Seals JSON values with the configured key(s); see the module docstring.

    >>> from cryptography.fernet import Fernet
    >>> TokenCipher(Fernet.generate_key().decode()).open("not sealed") is None
    True
    """

    def __init__(self, key: str) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        problem = key_problem(key)
        if problem is not None:
            raise ValueError(problem)
        self._fernet = MultiFernet([Fernet(k.encode("ascii")) for k in _keys(key)])
        self._mac_key = hashlib.sha256(b"threadline-mcp-state:" + _keys(key)[0].encode()).digest()

    def seal(self, value: Any) -> str:
        """``value`` (JSON-compatible) encrypted and authenticated, as text."""
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def open(self, sealed: Any) -> Any | None:
        """The value ``seal`` sealed; ``None`` when no key opens it (or it is not sealed)."""
        from cryptography.fernet import InvalidToken

        if not isinstance(sealed, str):
            return None
        try:
            text = self._fernet.decrypt(sealed.encode("ascii"))
        except (InvalidToken, UnicodeEncodeError):
            return None
        return json.loads(text)

    def sign(self, text: str) -> str:
        """A short MAC of ``text`` (an OAuth ``state`` binds its sign-in with it).

        >>> from cryptography.fernet import Fernet
        >>> cipher = TokenCipher(Fernet.generate_key().decode())
        >>> cipher.signed("abc", cipher.sign("abc")), cipher.signed("abd", cipher.sign("abc"))
        (True, False)
        """
        digest = hmac.new(self._mac_key, text.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode("ascii")

    def signed(self, text: str, mac: str) -> bool:
        return hmac.compare_digest(self.sign(text), mac)
