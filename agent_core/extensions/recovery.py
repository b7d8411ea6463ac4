"""Error recovery: what to do when a tool or the LLM fails (retry, fallback, skip, fail)."""

from __future__ import annotations

import random
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agent_core.errors import LlmError

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.llm.base import LlmRequest


class RecoveryActionType(StrEnum):
    RETRY = "retry"
    FAIL = "fail"
    FALLBACK = "fallback"
    SKIP = "skip"


class RecoveryAction(BaseModel):
    """The strategy's decision. ``fallback_value`` replaces the failed result (FALLBACK)."""

    model_config = ConfigDict(defer_build=True)

    action: RecoveryActionType
    retry_delay_ms: int | None = None
    fallback_value: Any = None
    message: str | None = None


class ErrorRecoveryStrategy:
    """Decides how the agent reacts to a failed tool call or LLM call; ``attempt`` is 1-based.

    The default fails at once. For tools, FAIL hands the error to the LLM as the tool's
    result; SKIP tells the LLM the call was skipped; FALLBACK uses ``fallback_value`` as the
    result. For the LLM, FAIL ends the turn with an error card; SKIP ends the turn quietly;
    FALLBACK answers with ``fallback_value`` (text or an ``LlmResponse``).
    """

    async def handle_tool_error(
        self, error: Exception, context: ToolContext, attempt: int = 1
    ) -> RecoveryAction:
        return RecoveryAction(action=RecoveryActionType.FAIL, message=f"Tool error: {error}")

    async def handle_llm_error(
        self, error: Exception, request: LlmRequest, attempt: int = 1
    ) -> RecoveryAction:
        return RecoveryAction(action=RecoveryActionType.FAIL, message=f"LLM error: {error}")


class BackoffRecoveryStrategy(ErrorRecoveryStrategy):
    """Retries retryable LLM errors (429, 529, 5xx, timeouts, dropped connections) with
    exponential backoff and jitter, honouring the provider's Retry-After: never sooner, and
    not at all when it asks for longer than ``max_delay_ms`` (the asker hears at once that
    the service is busy, instead of waiting); everything else fails.

    >>> import asyncio
    >>> from agent_core.errors import LlmRateLimitError
    >>> action = asyncio.run(BackoffRecoveryStrategy().handle_llm_error(
    ...     LlmRateLimitError("slow down", retry_after=3), request=None, attempt=1))
    >>> (action.action.value, action.retry_delay_ms)
    ('retry', 3000)
    """

    def __init__(
        self,
        *,
        max_attempts: int = 4,
        base_delay_ms: int = 500,
        max_delay_ms: int = 30_000,
        retry_tools: bool = False,
    ) -> None:
        self.max_attempts = max_attempts
        self.base_delay_ms = base_delay_ms
        self.max_delay_ms = max_delay_ms
        self.retry_tools = retry_tools

    def _delay_ms(self, error: Exception, attempt: int) -> int | None:
        """Milliseconds to wait before ``attempt + 1``; None when the provider asks for
        longer than ``max_delay_ms``."""
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            asked = int(float(retry_after) * 1000)
            return asked if asked <= self.max_delay_ms else None
        backoff = self.base_delay_ms * 2 ** (attempt - 1)
        return min(self.max_delay_ms, int(backoff * random.uniform(0.8, 1.2)))

    async def handle_llm_error(
        self, error: Exception, request: LlmRequest, attempt: int = 1
    ) -> RecoveryAction:
        retryable = isinstance(error, LlmError) and error.retryable
        delay = self._delay_ms(error, attempt) if retryable else None
        if delay is not None and attempt < self.max_attempts:
            return RecoveryAction(
                action=RecoveryActionType.RETRY,
                retry_delay_ms=delay,
                message=f"Retrying in {delay} ms (attempt {attempt} of {self.max_attempts})",
            )
        return await super().handle_llm_error(error, request, attempt)

    async def handle_tool_error(
        self, error: Exception, context: ToolContext, attempt: int = 1
    ) -> RecoveryAction:
        delay = self._delay_ms(error, attempt) if self.retry_tools else None
        if delay is not None and attempt < self.max_attempts:
            return RecoveryAction(action=RecoveryActionType.RETRY, retry_delay_ms=delay)
        return await super().handle_tool_error(error, context, attempt)


def default_recovery_strategy() -> BackoffRecoveryStrategy:
    """What an ``Agent`` given no ``error_recovery_strategy`` uses: an LLM call that failed
    transiently is tried up to 3 times (waits of about 0.5 s and 1 s, or what Retry-After
    asks, up to 20 s); tools are not retried. Pass ``ErrorRecoveryStrategy()`` to fail at
    once instead.

    >>> default_recovery_strategy().max_attempts
    3
    """
    return BackoffRecoveryStrategy(max_attempts=3, base_delay_ms=500, max_delay_ms=20_000)
