"""``TokenCounts``: one call's (or many calls') tokens, by the four kinds a provider bills."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

KINDS = ("input", "cache_read", "cache_write", "output")
"""The kinds of tokens, as metrics and reports name them."""

_API_NAMES = {
    "input": "input_tokens",
    "cache_read": "cache_read_input_tokens",
    "cache_write": "cache_creation_input_tokens",
    "output": "output_tokens",
}


class TokenCounts(BaseModel):
    """Input (uncached), cache-read, cache-write and output tokens.

    >>> counts = TokenCounts.from_usage({"input_tokens": 12, "output_tokens": 7,
    ...                                  "cache_read_input_tokens": 1100})
    >>> counts.total, (counts + counts).output
    (1119, 14)
    """

    model_config = ConfigDict(frozen=True)

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @classmethod
    def from_usage(cls, usage: Mapping[str, int] | None) -> TokenCounts:
        """From a response's ``usage`` as the Messages API reports it."""
        found = usage or {}
        return cls(**{kind: max(0, int(found.get(name) or 0)) for kind, name in _API_NAMES.items()})

    @property
    def total(self) -> int:
        return self.input + self.cache_read + self.cache_write + self.output

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            input=self.input + other.input,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            output=self.output + other.output,
        )

    def as_dict(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in KINDS}
