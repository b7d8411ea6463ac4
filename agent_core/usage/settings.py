"""``[usage]``: counting what each answer costs, and the prices it is counted at.

::

    [usage]
    record = true                 # the default: every LLM call is recorded

    [usage.prices."us.anthropic.claude-sonnet-5-5-v1:0"]   # your platform's price
    input = 2.2                   # USD per million tokens
    output = 11
    cache_write = 2.75
    cache_read = 0.22

Models not in ``prices`` are priced at Anthropic's list prices
(``agent_core.usage.prices.DEFAULT_PRICES``, dated); a model found in neither is counted
in tokens with its cost "unknown".

>>> UsageSettings(prices={"m": {"input": 1, "output": 5, "cache_write": 1.25,
...                             "cache_read": 0.1}}).price_table().price("m").output
5.0
"""

from __future__ import annotations

from pydantic import Field

from agent_core.settings import Section, env
from agent_core.usage.prices import Price, PriceTable


class UsageSettings(Section):
    """``[usage]`` (see the module docstring)."""

    table = "usage"

    record: bool = Field(True, validation_alias=env("record", "THREADLINE_USAGE"))
    """Record every LLM call's tokens and cost (``/usage``, ``threadline usage``, budgets)."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """USD per million tokens by model id, over the built-in list prices."""

    def price_table(self) -> PriceTable:
        return PriceTable(self.prices)
