"""Raw Messages API stream events -> ``LlmStreamChunk``s, one event at a time.

Text deltas pass straight through; a ``tool_use`` block's ``input_json_delta`` pieces are
joined and parsed when the block stops, so each tool call is yielded once, complete.
"""

from __future__ import annotations

import json

from anthropic.types import (
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
    TextDelta,
    ToolUseBlock,
)

from agent_core.errors import LlmServerError
from agent_core.llm.anthropic_convert import usage_dict
from agent_core.llm.base import LlmStreamChunk
from agent_core.tool_contract import ToolCall


class _PendingToolCall:
    __slots__ = ("id", "initial_input", "name", "parts")

    def __init__(self, block: ToolUseBlock) -> None:
        self.id, self.name, self.initial_input = block.id, block.name, block.input
        self.parts: list[str] = []

    def finish(self) -> ToolCall:
        raw = "".join(self.parts)
        if not raw.strip():
            return ToolCall(id=self.id, name=self.name, arguments=dict(self.initial_input or {}))
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as error:
            raise LlmServerError(f"tool {self.name!r} input is not valid JSON: {error}") from None
        if not isinstance(arguments, dict):
            raise LlmServerError(f"tool {self.name!r} input is not a JSON object")
        return ToolCall(id=self.id, name=self.name, arguments=arguments)


class StreamAssembler:
    """Feeds on raw stream events; returns the chunk each one produces, if any.

    >>> from anthropic.types import RawContentBlockDeltaEvent, TextDelta
    >>> assembler = StreamAssembler()
    >>> assembler.feed(RawContentBlockDeltaEvent(
    ...     type="content_block_delta", index=0, delta=TextDelta(type="text_delta", text="Hi")))
    LlmStreamChunk(content='Hi', tool_calls=None, finish_reason=None, usage=None, metadata={})
    """

    __slots__ = ("_stop_reason", "_tools", "_usage", "finished")

    def __init__(self) -> None:
        self._tools: dict[int, _PendingToolCall] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self.finished = False

    @property
    def usage(self) -> dict[str, int]:
        return self._usage

    def feed(self, event: RawMessageStreamEvent) -> LlmStreamChunk | None:
        """The chunk ``event`` completes (a text delta, a tool call, the end), else ``None``.

        Events this service does not use (pings, thinking, unknown future types) are ignored.
        """
        # The SDK builds an unknown event as the union's first member with the real ``type``,
        # so every pattern names its ``type`` too.
        match event:
            case RawContentBlockDeltaEvent(delta=TextDelta(type="text_delta", text=text)):
                return LlmStreamChunk(content=text) if text else None
            case RawContentBlockDeltaEvent(
                index=index, delta=InputJSONDelta(type="input_json_delta", partial_json=part)
            ):
                if (pending := self._tools.get(index)) is not None:
                    pending.parts.append(part)
            case RawContentBlockStartEvent(
                index=index, content_block=ToolUseBlock(type="tool_use") as block
            ):
                self._tools[index] = _PendingToolCall(block)
            case RawContentBlockStopEvent(type="content_block_stop", index=index):
                if (pending := self._tools.pop(index, None)) is not None:
                    return LlmStreamChunk(tool_calls=[pending.finish()])
            case RawMessageStartEvent(type="message_start", message=message):
                self._usage = usage_dict(message.usage)
            case RawMessageDeltaEvent(type="message_delta", delta=delta, usage=usage):
                self._stop_reason = delta.stop_reason or self._stop_reason
                counts = usage_dict(usage)
                if usage.input_tokens is None:
                    del counts["input_tokens"]
                self._usage.update(counts)
            case RawMessageStopEvent(type="message_stop"):
                return self._final()
        return None

    def close(self) -> LlmStreamChunk | None:
        """Called when the stream ends: the final chunk if ``message_stop`` never came.

        Raises ``LlmServerError`` when the stream stopped before the model said why.
        """
        if self.finished:
            return None
        if self._stop_reason is None:
            raise LlmServerError("the model stream ended before the message was complete")
        return self._final()

    def _final(self) -> LlmStreamChunk:
        self.finished = True
        return LlmStreamChunk(finish_reason=self._stop_reason, usage=self._usage or None)
