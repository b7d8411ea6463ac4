"""LLM middleware: transform each request before the LLM and each response after it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.llm.base import LlmRequest, LlmResponse


class LlmMiddleware:
    """Both methods run in list order around every LLM call, streamed or not.

    >>> class Cooler(LlmMiddleware):
    ...     async def before_llm_request(self, request):
    ...         return request.model_copy(update={"temperature": 0.0})
    """

    async def before_llm_request(self, request: LlmRequest) -> LlmRequest:
        return request

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        return response
