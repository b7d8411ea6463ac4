"""``McpMasker``: no secret of a server's reaches the model, a person or a log through it.

What an MCP server answers is text Threadline did not write: a server may echo the bearer
token it was called with, an environment variable, a header, or a URL with a password in it.
Everything read from a server passes through its masker before anyone sees it: each known
secret (the server's configured ones, and the caller's own access token) becomes ``********``,
and so does the password of any URL.

>>> masker = McpMasker(["s3cr3t-token-value"])
>>> masker.mask("Authorization: Bearer s3cr3t-token-value; db=postgres://app:pw@db/x")
'Authorization: Bearer ********; db=postgres://app:***@db/x'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_core.settings import masked

SHORTEST_SECRET = 6
"""Shorter values are not masked: they would blank out ordinary words and numbers."""


class McpMasker:
    """Masks the given secrets (and URL passwords) in text; see the module docstring.

    >>> McpMasker().mask("nothing to hide")
    'nothing to hide'
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= SHORTEST_SECRET}, key=len, reverse=True)
        self._secrets = tuple(values)
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    def with_secrets(self, secrets: Iterable[str]) -> McpMasker:
        """This masker's secrets and ``secrets`` (a caller's own token, for one call)."""
        return McpMasker([*self._secrets, *secrets])

    def mask(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub("********", text)
        return masked(text) if "://" in text else text
