"""``[budgets]``: daily or monthly token or cost budgets per person, group and profile.

::

    [budgets]
    admins_exempt = true          # the default; false counts admins like everyone

    [[budgets.limits]]            # each person: 200,000 tokens a day
    scope = "person"
    period = "day"
    tokens = 200_000

    [[budgets.limits]]            # the analysts group, all its members together: $300 a month
    scope = "group"
    group = "analysts"
    period = "month"
    cost = 300.0

    [[budgets.limits]]            # everything asked of the finance profile: $1,000 a month
    scope = "profile"
    profile = "finance"
    period = "month"
    cost = 1000

A ``person`` limit may name a ``group`` (then it applies to each member of that group
only) or a ``profile`` (only what they ask that profile). Tokens are every token billed
(input, cache reads and writes, output); cost is USD at ``[usage.prices]``. Periods are
UTC days and calendar months. A budget of zero turns answers off for whom it covers.

>>> BudgetSettings(limits=[{"scope": "person", "period": "day", "tokens": 0}]).limits[0].unit
'tokens'
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_core.settings import Section, env

Scope = Literal["person", "group", "profile"]
Period = Literal["day", "month"]


class BudgetLimit(BaseModel):
    """One budget: whose spending it counts, over which period, in tokens or dollars."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Scope
    period: Period = "day"
    tokens: int | None = Field(None, ge=0)
    cost: float | None = Field(None, ge=0)
    """US dollars."""
    group: str | None = None
    profile: str | None = None

    @model_validator(mode="after")
    def _one_amount(self) -> Self:
        if (self.tokens is None) == (self.cost is None):
            raise ValueError("a budget sets exactly one of tokens or cost")
        if self.scope == "group" and not self.group:
            raise ValueError('a budget with scope = "group" names its group')
        if self.scope == "profile" and not self.profile:
            raise ValueError('a budget with scope = "profile" names its profile')
        return self

    @property
    def unit(self) -> Literal["tokens", "cost"]:
        return "tokens" if self.tokens is not None else "cost"

    @property
    def amount(self) -> int:
        """The limit in the counters' unit: tokens, or billionths of a dollar."""
        if self.tokens is not None:
            return self.tokens
        return round((self.cost or 0.0) * 1_000_000_000)


class BudgetSettings(Section):
    """``[budgets]`` (see the module docstring)."""

    table = "budgets"

    admins_exempt: bool = Field(
        True, validation_alias=env("admins_exempt", "THREADLINE_BUDGET_ADMINS_EXEMPT")
    )
    """Admins are not counted against budgets (their use is still recorded)."""
    limits: list[BudgetLimit] = Field(default_factory=list)
