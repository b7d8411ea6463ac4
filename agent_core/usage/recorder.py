"""Counting each LLM call, and holding people to their budgets, as agent extensions.

``UsageRecorder`` is an ``LlmMiddleware``: after every call (streamed or not) it records
the tokens the provider reported, priced, in the ledger (per turn, person, profile,
workspace), and charges them to the budgets that cover the asker. When that call used a
budget up and wants tools run, the turn stops there: the call's text is kept and the
tool calls are replaced by the budget's sentence, so the conversation stays valid and
nothing more is spent. ``BudgetHook`` refuses a message while a budget is used up.

One agent per profile gets its own pair (``profile=``), so profile budgets need no lookup.

>>> import asyncio
>>> from agent_core import Agent, RequestContext, ScriptedLlmService, ToolRegistry
>>> from agent_core.usage.ledger import MemoryUsageLedger
>>> ledger = MemoryUsageLedger()
>>> recorder = UsageRecorder(ledger, model="claude-sonnet-5-5")
>>> agent = Agent(llm_service=ScriptedLlmService(["Hi"]), tool_registry=ToolRegistry(),
...               llm_middlewares=[recorder])
>>> _ = asyncio.run(agent.send_message(RequestContext(), "hello").__anext__())
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from agent_core.clock import utcnow
from agent_core.errors import BudgetExceededError, StateUnavailableError
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.llm.base import LlmRequest, LlmResponse
from agent_core.usage.budgets import Budgets
from agent_core.usage.counts import TokenCounts
from agent_core.usage.ledger import UsageLedger, UsageRecord
from agent_core.usage.prices import PriceTable
from agent_core.users import User

logger = logging.getLogger("threadline.usage")

BUDGET_STOP = "budget"
"""``finish_reason`` of a response whose tool calls a used-up budget stopped."""


class UsageRecorder(LlmMiddleware):
    """Records every call in ``ledger`` and charges ``budgets`` (see the module docstring).

    A call whose usage cannot be recorded (the state store is down) is answered all the
    same, and said once in the log: an outage of the ledger never costs a person an answer.
    """

    def __init__(
        self,
        ledger: UsageLedger,
        *,
        model: str,
        prices: PriceTable | None = None,
        profile: str | None = None,
        budgets: Budgets | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.ledger = ledger
        self.model = model
        self.prices = prices or PriceTable()
        self.profile = profile
        self.budgets = budgets
        self._clock = clock
        self._outage_told = False

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        if response.usage is None:  # nothing reported (a scripted model, a fallback)
            return response
        tokens = TokenCounts.from_usage(response.usage)
        cost = self.prices.cost(self.model, tokens)
        record = UsageRecord(
            at=self._clock(),
            turn_id=str(request.metadata.get("request_id") or ""),
            person=request.user.id,
            profile=self.profile,
            workspace=_text(request.metadata.get("workspace")),
            model=self.model,
            tokens=tokens,
            cost_nano=cost,
        )
        try:
            await self.ledger.record(record)
            if self.budgets is None:
                return response
            over = await self.budgets.charge(
                request.user, self.profile, tokens=tokens.total, cost_nano=cost
            )
        except StateUnavailableError:
            self._say_outage_once()
            return response
        if over is None or not response.tool_calls:
            return response
        logger.info("turn %s stopped: %s", record.turn_id, over.limit)
        stopped = "\n\n".join(part for part in (response.content, over.sentence()) if part)
        return response.model_copy(
            update={"content": stopped, "tool_calls": None, "finish_reason": BUDGET_STOP}
        )

    def _say_outage_once(self) -> None:
        if not self._outage_told:
            self._outage_told = True
            logger.warning("LLM usage could not be recorded: the state store is unavailable")


class BudgetHook(LifecycleHook):
    """Refuses a message while a budget covering the asker is used up; the refusal is the
    budget's sentence (which budget, when it resets). Admins are exempt unless
    ``[budgets] admins_exempt = false``."""

    def __init__(self, budgets: Budgets, *, profile: str | None = None) -> None:
        self.budgets = budgets
        self.profile = profile

    async def before_message(self, user: User, message: str) -> str | None:
        over = await self.budgets.check(user, self.profile)
        if over is not None:
            raise BudgetExceededError(over.sentence())
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
