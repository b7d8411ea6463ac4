"""Prices: each platform's id of a model finds Anthropic's list price; configured prices
win; a model found nowhere costs "unknown" (``None``), never 0."""

from __future__ import annotations

import pytest

from agent_core.usage.counts import TokenCounts
from agent_core.usage.prices import DEFAULT_PRICES, Price, PriceTable, claude_model


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-5-5",
        "claude-sonnet-5-5-20261001",
        "us.anthropic.claude-sonnet-5-5-v1:0",
        "global.anthropic.claude-sonnet-5-5-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0",
        "claude-sonnet-5-5@20261001",
        "claude-sonnet-5-5[1m]",
    ],
)
def test_every_platform_id_of_a_model_finds_its_price(model: str) -> None:
    assert claude_model(model) == "claude-sonnet-5-5"
    assert PriceTable().price(model) == DEFAULT_PRICES["claude-sonnet-5-5"]


def test_a_call_is_priced_by_kind() -> None:
    counts = TokenCounts(input=1_000_000, cache_read=1_000_000, cache_write=1_000_000, output=1)
    nano = PriceTable().cost("claude-opus-5", counts)
    assert nano == (5 + 0.5 + 6.25) * 1_000_000_000 + 25_000


def test_configured_prices_win_and_unknown_models_cost_none() -> None:
    mine = Price(input=1, output=1, cache_write=1, cache_read=1)
    table = PriceTable({"us.anthropic.claude-sonnet-5-5-v1:0": mine, "in-house-model": mine})
    assert table.price("us.anthropic.claude-sonnet-5-5-v1:0") == mine
    assert table.price("claude-sonnet-5-5") == DEFAULT_PRICES["claude-sonnet-5-5"]
    assert table.cost("in-house-model", TokenCounts(output=2)) == 2000
    assert table.cost("claude-unreleased-9", TokenCounts(output=2)) is None
    assert table.cost("claude-unreleased-9", TokenCounts()) is None
