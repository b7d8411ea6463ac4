"""The ``think`` stage: build the LLM request, call the LLM through the middleware, stream the
text to the user as it arrives, and record the assistant's message (steps 10-14)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agent_core.components import ComponentStream, RichTextComponent, UiComponent
from agent_core.config import UiFeature
from agent_core.conversations import Message
from agent_core.extensions.recovery import RecoveryAction, RecoveryActionType
from agent_core.llm.base import LlmMessage, LlmRequest, LlmResponse
from agent_core.tools.base import ToolCall
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState


class TextStream:
    """The one text component of an LLM response: created on the first delta, then updated."""

    __slots__ = ("component", "text")

    def __init__(self) -> None:
        self.component: RichTextComponent | None = None
        self.text = ""

    def append(self, delta: str) -> UiComponent:
        self.text += delta
        if self.component is None:
            self.component = RichTextComponent(
                content=self.text, delta=delta, markdown=True, streaming=True
            )
        else:
            self.component = self.component.update(content=self.text, delta=delta)
        return UiComponent.of(self.component)

    def reset(self) -> UiComponent | None:
        """Forget partial text before a retry; the client clears what it showed."""
        self.text = ""
        if self.component is None:
            return None
        self.component = self.component.replace(content="", delta=None)
        return UiComponent.of(self.component)


async def build_request(deps: TurnDeps, state: TurnState) -> LlmRequest:
    """Steps 10-11: conversation filters, conversion, ``enhance_user_messages``."""
    user, conversation = state.require_user(), state.require_conversation()
    messages = conversation.messages
    for conversation_filter in deps.conversation_filters:
        async with deps.tracer.span(
            "agent.conversation.filter", metric="agent.filter.duration",
            tag_attributes=("filter",), filter=type(conversation_filter).__name__,
            message_count_before=len(messages),
        ) as span:
            messages = await conversation_filter.filter_messages(list(messages))
            span.set_attribute("message_count_after", len(messages))
    llm_messages = [
        LlmMessage(
            role=m.role, content=m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id
        )
        for m in messages
    ]
    enhancer = deps.llm_context_enhancer
    if enhancer is not None:
        async with deps.tracer.span(
            "agent.llm_context.enhance_user_messages",
            metric="agent.llm_context.enhance_user_messages.duration",
            tag_attributes=("enhancer",), enhancer=type(enhancer).__name__,
            message_count=len(llm_messages),
        ) as span:
            llm_messages = await enhancer.enhance_user_messages(llm_messages, user)
            span.set_attribute("message_count_after", len(llm_messages))
    return LlmRequest(
        messages=llm_messages,
        tools=state.tool_schemas or None,
        user=user,
        stream=deps.config.stream_responses,
        temperature=deps.config.temperature,
        max_tokens=deps.config.max_tokens,
        system_prompt=state.system_prompt,
        metadata={"conversation_id": conversation.id, "request_id": state.request_id},
    )


def _middleware_span(deps: TurnDeps, phase: str, middleware: object, request: LlmRequest) -> Any:
    return deps.tracer.span(
        f"agent.middleware.{phase}", metric="agent.middleware.duration",
        tags={"phase": phase}, tag_attributes=("middleware", "stream"),
        middleware=type(middleware).__name__, stream=request.stream,
    )


async def _before_llm(deps: TurnDeps, request: LlmRequest) -> LlmRequest:
    for middleware in deps.llm_middlewares:
        async with _middleware_span(deps, "before_llm", middleware, request):
            request = await middleware.before_llm_request(request)
    return request


async def _after_llm(deps: TurnDeps, request: LlmRequest, response: LlmResponse) -> LlmResponse:
    for middleware in deps.llm_middlewares:
        async with _middleware_span(deps, "after_llm", middleware, request):
            response = await middleware.after_llm_response(request, response)
    return response


async def _send(deps: TurnDeps, request: LlmRequest) -> LlmResponse:
    async with deps.tracer.span(
        "llm.request", metric="llm.request.duration",
        model=deps.llm_service.model_name, stream=False,
    ):
        return await deps.llm_service.send_request(request)


async def _stream(deps: TurnDeps, request: LlmRequest, text: TextStream) -> AsyncIterator[
    UiComponent | LlmResponse
]:
    """Yields text components as deltas arrive, then the accumulated ``LlmResponse``."""
    calls: list[ToolCall] = []
    finish_reason, usage = None, None
    async with deps.tracer.span(
        "llm.stream", metric="llm.stream.duration", model=deps.llm_service.model_name
    ) as span:
        async for chunk in deps.llm_service.stream_request(request):
            if chunk.content:
                yield text.append(chunk.content)
            if chunk.tool_calls:
                calls.extend(chunk.tool_calls)
            finish_reason = chunk.finish_reason or finish_reason
            usage = chunk.usage or usage
        span.set_attribute("content_length", len(text.text))
        span.set_attribute("tool_call_count", len(calls))
    yield LlmResponse(
        content=text.text or None, tool_calls=calls or None,
        finish_reason=finish_reason, usage=usage,
    )


async def _recover(
    deps: TurnDeps, error: Exception, request: LlmRequest, attempt: int
) -> RecoveryAction:
    """The strategy's decision; FAIL (or no strategy) re-raises ``error``."""
    strategy = deps.error_recovery_strategy
    if strategy is None:
        raise error
    action = await strategy.handle_llm_error(error, request, attempt)
    if action.action is RecoveryActionType.FAIL:
        raise error
    return action


def _fallback_response(action: RecoveryAction) -> LlmResponse:
    if action.action is RecoveryActionType.FALLBACK:
        value = action.fallback_value
        return value if isinstance(value, LlmResponse) else LlmResponse(content=str(value))
    return LlmResponse(content=None, finish_reason="skipped")


async def _call_llm(deps: TurnDeps, state: TurnState, request: LlmRequest, text: TextStream) -> (
    ComponentStream
):
    """Step 13 with recovery: sets ``state.response``; retries honour the strategy's delay."""
    attempt = 1
    while True:
        try:
            if request.stream:
                async for item in _stream(deps, request, text):
                    if isinstance(item, LlmResponse):
                        state.response = item
                    else:
                        yield item
            else:
                state.response = await _send(deps, request)
            return
        except Exception as error:
            action = await _recover(deps, error, request, attempt)
        if action.action is not RecoveryActionType.RETRY:
            state.response = _fallback_response(action)
            return
        if (cleared := text.reset()) is not None:
            yield cleared
        await asyncio.sleep((action.retry_delay_ms or 0) / 1000)
        attempt += 1


async def think(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """Steps 10-14 for one LLM round trip."""
    state.response = None
    request = await _before_llm(deps, await build_request(deps, state))
    text = TextStream()
    async for component in _call_llm(deps, state, request, text):
        yield component
    if state.response is None:
        raise RuntimeError("the LLM call ended without a response")
    response = state.response = await _after_llm(deps, request, state.response)
    for component in _final_text(deps, state, response, text):
        yield component
    if response.content or response.tool_calls:
        state.require_conversation().add_message(Message(
            role="assistant", content=response.content or "", tool_calls=response.tool_calls
        ))


def _final_text(
    deps: TurnDeps, state: TurnState, response: LlmResponse, text: TextStream
) -> list[UiComponent]:
    """Settle the text component: final version, or - when the text only introduces tool
    calls - take it back from everyone and show it to those with the invocation feature."""
    content = response.content or ""
    shown = text.component
    if not response.tool_calls:
        if shown is None:
            final = RichTextComponent(content=content, markdown=True)
            return [UiComponent.of(final, content)] if content else []
        if content != text.text:  # middleware rewrote the streamed text
            rewritten = shown.replace(content=content, delta=None, streaming=False)
            return [UiComponent.of(rewritten, content)]
        return [UiComponent.of(shown.update(delta=None, streaming=False), content)]
    out = [UiComponent.of(shown.remove())] if shown is not None else []
    feature = UiFeature.TOOL_INVOCATION_MESSAGE_IN_CHAT
    if content and state.can(feature):
        out.append(UiComponent.of(
            RichTextComponent(content=content, markdown=True), content,
            audience=deps.config.ui_features.audience_of(feature), ui_feature=feature.value,
        ))
    return out
