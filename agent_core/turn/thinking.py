"""The ``think`` stage: build the LLM request, call the LLM through the middleware, stream the
text to the user as it arrives, and record the assistant's message (steps 10-14)."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core.channel import ChannelMetadata
from agent_core.components import ComponentStream, RichTextComponent, UiComponent
from agent_core.config import UiFeature
from agent_core.conversations import Message
from agent_core.extensions.enhancer import LlmContextEnhancer
from agent_core.extensions.recovery import RecoveryAction, RecoveryActionType
from agent_core.llm.base import LlmRequest, LlmResponse, LlmStreamChunk
from agent_core.llm.telemetry import request_attributes, response_attributes
from agent_core.tool_contract import ToolCall
from agent_core.turn.citing import sources_component
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState, as_llm_message


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
    """Steps 10-11: conversation filters (then the history budget), conversion,
    ``enhance_user_messages``."""
    user, conversation = state.require_user(), state.require_conversation()
    messages = conversation.messages
    for conversation_filter in deps.conversation_filters:
        async with deps.tracer.span(
            "agent.conversation.filter",
            metric="agent.filter.duration",
            tag_attributes=("filter",),
            filter=type(conversation_filter).__name__,
            message_count_before=len(messages),
        ) as span:
            messages = await conversation_filter.filter_messages(list(messages))
            span.set_attribute("message_count_after", len(messages))
    if (budget := deps.history_budget()) is not None:
        messages = messages[budget.first_kept(messages) :]
    enhancer = deps.llm_context_enhancer
    if _may_share_messages(deps):
        llm_messages = [state.llm_message(m) for m in messages]
    else:  # a middleware or an enhancer may change them: each call gets its own
        llm_messages = [as_llm_message(m) for m in messages]
    if enhancer is not None:
        async with deps.tracer.span(
            "agent.llm_context.enhance_user_messages",
            metric="agent.llm_context.enhance_user_messages.duration",
            tag_attributes=("enhancer",),
            enhancer=type(enhancer).__name__,
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
        metadata={
            "conversation_id": conversation.id,
            "request_id": state.request_id,
            "workspace": _workspace(state.request_context.metadata),
        },
    )


def _workspace(metadata: ChannelMetadata) -> str | None:
    """``slack:T1`` / ``teams:tenant``: where the turn was asked (usage is counted by it)."""
    workspace = metadata.get("workspace_id")
    if not workspace:
        return None
    return f"{metadata.get('platform') or 'local'}:{workspace}"


def _may_share_messages(deps: TurnDeps) -> bool:
    """Whether the LLM calls of a turn may share converted messages: nothing that could
    change them in place sees them (no middleware, no ``enhance_user_messages``)."""
    enhancer = deps.llm_context_enhancer
    return not deps.llm_middlewares and (
        enhancer is None
        or type(enhancer).enhance_user_messages is LlmContextEnhancer.enhance_user_messages
    )


def _middleware_span(deps: TurnDeps, phase: str, middleware: object, request: LlmRequest) -> Any:
    return deps.tracer.span(
        f"agent.middleware.{phase}",
        metric="agent.middleware.duration",
        tags={"phase": phase},
        tag_attributes=("middleware", "stream"),
        middleware=type(middleware).__name__,
        stream=request.stream,
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
    service = deps.llm_service
    async with deps.tracer.span(
        "llm.request",
        metric="llm.request.duration",
        model=service.model_name,
        stream=False,
        **request_attributes(service, request),
    ) as span:
        response = await service.send_request(request)
        for name, value in response_attributes(response).items():
            span.set_attribute(name, value)
        return response


class _Reply:
    """What a streamed answer has said besides its text: tool calls, why it ended, usage."""

    __slots__ = ("calls", "finish_reason", "usage")

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None

    def add(self, chunk: LlmStreamChunk) -> None:
        if chunk.tool_calls:
            self.calls.extend(chunk.tool_calls)
        self.finish_reason = chunk.finish_reason or self.finish_reason
        self.usage = chunk.usage or self.usage

    def response(self, text: TextStream, span: Any) -> LlmResponse:
        span.set_attribute("content_length", len(text.text))
        span.set_attribute("tool_call_count", len(self.calls))
        response = LlmResponse(
            content=text.text or None,
            tool_calls=self.calls or None,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )
        for name, value in response_attributes(response).items():
            span.set_attribute(name, value)
        return response


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


async def think(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """Steps 10-14 for one LLM round trip: text is shown as it streams in; a failed call
    goes to the recovery strategy (retried after its delay, or a fallback answer).

    The call is made here rather than in a helper generator: every async generator costs
    the event loop a registration, and this stage runs on every round of every turn.
    """
    state.response = None
    request = await _before_llm(deps, await build_request(deps, state))
    text, attempt = TextStream(), 1
    while True:
        action = None
        try:
            if request.stream:
                reply = _Reply()
                async with deps.tracer.span(
                    "llm.stream",
                    metric="llm.stream.duration",
                    model=deps.llm_service.model_name,
                    **request_attributes(deps.llm_service, request),
                ) as span:
                    async for chunk in deps.llm_service.stream_request(request):
                        if chunk.content:
                            yield text.append(chunk.content)
                        reply.add(chunk)
                    answer = reply.response(text, span)
            else:
                answer = await _send(deps, request)
        except Exception as error:
            action = await _recover(deps, error, request, attempt)
        if action is None:
            break
        if action.action is not RecoveryActionType.RETRY:
            answer = _fallback_response(action)
            break
        if (cleared := text.reset()) is not None:
            yield cleared
        await asyncio.sleep((action.retry_delay_ms or 0) / 1000)
        attempt += 1
    response = state.response = await _after_llm(deps, request, answer)
    for component in _final_text(deps, state, response, text):
        yield component
    if response.content or response.tool_calls:
        state.require_conversation().add_message(
            Message(
                role="assistant", content=response.content or "", tool_calls=response.tool_calls
            )
        )


def _answer_text(
    content: str, shown: RichTextComponent | None, text: TextStream
) -> list[UiComponent]:
    if shown is None:
        final = RichTextComponent(content=content, markdown=True)
        return [UiComponent.of(final, content)] if content else []
    if content != text.text:  # middleware rewrote the streamed text
        rewritten = shown.replace(content=content, delta=None, streaming=False)
        return [UiComponent.of(rewritten, content)]
    return [UiComponent.of(shown.update(delta=None, streaming=False), content)]


def _final_text(
    deps: TurnDeps, state: TurnState, response: LlmResponse, text: TextStream
) -> list[UiComponent]:
    """Settle the text component: final version, or - when the text only introduces tool
    calls - take it back from everyone and show it to those with the invocation feature."""
    content = response.content or ""
    shown = text.component
    if not response.tool_calls:  # the answer: its sources first, so they go with its text
        cited = sources_component(deps, state)
        return ([cited] if cited is not None else []) + _answer_text(content, shown, text)
    out = [UiComponent.of(shown.remove())] if shown is not None else []
    feature = UiFeature.TOOL_INVOCATION_MESSAGE_IN_CHAT
    if content and state.can(feature):
        out.append(
            UiComponent.of(
                RichTextComponent(content=content, markdown=True),
                content,
                audience=deps.config.ui_features.audience_of(feature),
                ui_feature=feature.value,
            )
        )
    return out
