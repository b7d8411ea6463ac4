"""What Claude costs: list prices per model, and the cost of one call's tokens.

``DEFAULT_PRICES`` are Anthropic's list prices in USD per million tokens, as published on
``platform.claude.com/docs/en/about-claude/pricing`` and the models' overview pages, read
on ``PRICES_AS_OF``. The 5-minute cache write is what Threadline's breakpoints write
(``cache_control: ephemeral``). The cloud platforms set their own prices (regional
endpoints cost more): put yours in ``[usage.prices]``, which wins over these::

    [usage.prices."us.anthropic.claude-sonnet-5-5-v1:0"]
    input = 2.2
    output = 11
    cache_write = 2.75
    cache_read = 0.22

A model is looked up by its id as configured, then by the Claude model it names (a Bedrock
id or inference profile, a Vertex ``@version``, a dated id all name one); a model found
nowhere costs ``None`` ("unknown"), and its tokens are still counted.

>>> table = PriceTable()
>>> table.cost("us.anthropic.claude-sonnet-5-5-v1:0", TokenCounts(input=1_000_000, output=1000))
2010000000
>>> table.cost("claude-made-up", TokenCounts(input=10)) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from agent_core.usage.counts import TokenCounts

PRICES_AS_OF = "2026-11-26"
PRICE_SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
NANO_PER_USD = 1_000_000_000


class Price(BaseModel):
    """USD per million tokens of each kind.

    >>> Price(input=2, output=10, cache_write=2.5, cache_read=0.2).output
    10.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)

    def nano_usd(self, counts: TokenCounts) -> int:
        """The cost of ``counts`` in billionths of a dollar (exact for prices in tenths of
        a cent per million tokens)."""
        thousandths = (
            counts.input * round(self.input * 1000)
            + counts.output * round(self.output * 1000)
            + counts.cache_write * round(self.cache_write * 1000)
            + counts.cache_read * round(self.cache_read * 1000)
        )
        return thousandths  # (tokens x USD/1e6 tokens) in 1e-9 USD = tokens x USD x 1000


def _price(input: float, output: float, cache_write: float, cache_read: float) -> Price:
    return Price(input=input, output=output, cache_write=cache_write, cache_read=cache_read)


_FABLE_5_1 = _price(10, 50, 12.5, 0.25)
_OPUS_4_5 = _price(5, 25, 6.25, 0.5)
_OPUS_4 = _price(15, 75, 18.75, 1.5)
_SONNET_5 = _price(2, 10, 2.5, 0.2)
_SONNET_4 = _price(3, 15, 3.75, 0.3)

DEFAULT_PRICES: dict[str, Price] = {
    "claude-fable-5-1": _FABLE_5_1,
    "claude-mythos-5-1": _FABLE_5_1,
    "claude-fable-5": _price(10, 50, 12.5, 1),
    "claude-mythos-5": _price(10, 50, 12.5, 1),
    "claude-opus-5-5": _price(4, 20, 5, 0.2),
    "claude-opus-5": _OPUS_4_5,
    "claude-opus-4-8": _OPUS_4_5,
    "claude-opus-4-7": _OPUS_4_5,
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-5-5": _SONNET_5,
    "claude-sonnet-5": _SONNET_5,
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-haiku-5-5": _price(0.1, 0.5, 0.125, 0.01),  # prompts up to 100,000 tokens
    "claude-haiku-4-5": _price(1, 5, 1.25, 0.1),
}
"""Anthropic's list prices on ``PRICES_AS_OF`` (USD per million tokens; see the module)."""

_PLATFORM_WRAPPING = (
    re.compile(r"^arn:aws[\w-]*:bedrock:[^/]*/"),  # an ARN: what follows the resource type
    re.compile(r"^(?:us|eu|apac|ap|jp|au|ca|global|us-gov)\."),  # a cross-region profile
    re.compile(r"^anthropic\."),  # Bedrock's publisher prefix
    re.compile(r"-v\d+(?::\d+)?$"),  # Bedrock's version
    re.compile(r"@[\w.-]+$"),  # Vertex's version
    re.compile(r"\[1m\]$"),  # the long-context variant's marker
    re.compile(r"-\d{8}$"),  # a dated snapshot
)


def claude_model(model: str) -> str:
    """The Claude model a platform's id names.

    >>> [claude_model(m) for m in ("us.anthropic.claude-opus-5-v1:0",
    ...     "claude-sonnet-5-5@20261001", "arn:aws:bedrock:us-east-1::foundation-model/"
    ...     "anthropic.claude-haiku-4-5-20251001-v1:0")]
    ['claude-opus-5', 'claude-sonnet-5-5', 'claude-haiku-4-5']
    """
    name = model.strip().lower()
    for pattern in _PLATFORM_WRAPPING:
        name = pattern.sub("", name)
    return name


class PriceTable:
    """``DEFAULT_PRICES`` with ``overrides`` (configured prices, by model id) on top."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.overrides = dict(overrides or {})

    def price(self, model: str) -> Price | None:
        if model in self.overrides:
            return self.overrides[model]
        name = claude_model(model)
        return self.overrides.get(name) or DEFAULT_PRICES.get(name)

    def cost(self, model: str, counts: TokenCounts) -> int | None:
        """``counts`` priced for ``model`` in billionths of a dollar; ``None``: unknown."""
        price = self.price(model)
        return None if price is None else price.nano_usd(counts)


def usd(nano: int) -> float:
    """Billionths of a dollar as dollars."""
    return nano / NANO_PER_USD
