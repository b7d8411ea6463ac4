"""Pure converters between Threadline's LLM models and the Anthropic Messages API.

No I/O here: ``AnthropicLlmService`` calls these to build a request and read a response.

Prompt caching (``with_cache_breakpoints``): every request marks three cache breakpoints,
the last tool (the tool definitions), the system prompt, and the last block of the
conversation. The API then reads from its cache the longest prefix an earlier request wrote:
within a turn, the second and later calls resend only what the previous call added (a tool
call and its result); across turns, the tools, and the system prompt while it is unchanged.

>>> from agent_core.llm.base import LlmMessage
>>> [turn["role"] for turn in to_messages([
...     LlmMessage(role="user", content="Hi"), LlmMessage(role="user", content="there")])]
['user']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from anthropic.types import (
    CacheControlEphemeralParam,
    ContentBlockParam,
    Message,
    MessageDeltaUsage,
    MessageParam,
    TextBlock,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    Usage,
)
from anthropic.types.message_create_params import MessageCreateParamsBase

from agent_core.errors import LlmBadRequestError
from agent_core.llm.base import LlmMessage, LlmRequest, LlmResponse
from agent_core.tool_contract import ToolCall, ToolSchema

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_Turn = tuple[Literal["user", "assistant"], list[ContentBlockParam]]

EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}


def system_text(request: LlmRequest) -> str | None:
    """The system prompt plus any ``system`` messages, which Anthropic takes as one field."""
    parts = [request.system_prompt or ""]
    parts += [message.content for message in request.messages if message.role == "system"]
    text = "\n\n".join(part for part in parts if part.strip())
    return text or None


def to_messages(messages: Iterable[LlmMessage]) -> list[MessageParam]:
    """Anthropic turns: consecutive same-role messages (and tool results) merge into one.

    Blank text is dropped (the API rejects empty text blocks); a message with nothing left
    disappears, so its neighbours may merge.
    """
    turns: list[_Turn] = []
    for message in messages:
        if message.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [_message_param(role, blocks) for role, blocks in turns]


def _blocks(message: LlmMessage) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = []
    if message.role == "tool":
        if not message.tool_call_id:
            raise LlmBadRequestError("a tool result message has no tool_call_id")
        result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.content.strip():
            result["content"] = message.content
        return [result]
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks += [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            for call in message.tool_calls or ()
        ]
    return blocks


def _message_param(
    role: Literal["user", "assistant"], blocks: list[ContentBlockParam]
) -> MessageParam:
    if role == "assistant":
        return {"role": "assistant", "content": blocks}
    # The API wants a user turn's tool results before any text that follows them.
    results = [block for block in blocks if block["type"] == "tool_result"]
    if results and len(results) != len(blocks):
        blocks = results + [block for block in blocks if block["type"] != "tool_result"]
    return {"role": "user", "content": blocks}


def to_tools(schemas: Sequence[ToolSchema]) -> list[ToolParam]:
    """Anthropic tool definitions; ``parameters`` is the ``input_schema``."""
    return [
        {"name": schema.name, "description": schema.description, "input_schema": schema.parameters}
        for schema in schemas
    ]


def with_cache_breakpoints(params: MessageCreateParamsBase) -> MessageCreateParamsBase:
    """``params`` with cache breakpoints on the last tool, the system prompt and the last
    block of the conversation (see the module docstring); the input is left unchanged.

    >>> marked = with_cache_breakpoints({"model": "m", "max_tokens": 9, "system": "Be brief.",
    ...     "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]})
    >>> marked["system"][0]["cache_control"], marked["messages"][-1]["content"][-1]["cache_control"]
    ({'type': 'ephemeral'}, {'type': 'ephemeral'})
    """
    marked: MessageCreateParamsBase = {**params}
    if tools := list(params.get("tools") or ()):
        last_tool: Any = {**tools[-1], "cache_control": EPHEMERAL}
        tools[-1] = last_tool
        marked["tools"] = tools
    system = params.get("system")
    if isinstance(system, str):
        marked["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    messages = list(params["messages"])
    if messages and isinstance(content := messages[-1]["content"], list) and content:
        last: Any = {**content[-1], "cache_control": EPHEMERAL}
        last_message: Any = {**messages[-1], "content": [*content[:-1], last]}
        messages[-1] = last_message
        marked["messages"] = messages
    return marked


def tool_problems(schemas: Sequence[ToolSchema]) -> list[str]:
    """Why Anthropic would reject these tools (empty when it would accept them)."""
    problems: list[str] = []
    seen: set[str] = set()
    for schema in schemas:
        if not TOOL_NAME.fullmatch(schema.name):
            problems.append(
                f"tool name {schema.name!r} must match {TOOL_NAME.pattern} "
                "(letters, digits, '_' or '-', at most 64)"
            )
        if schema.name in seen:
            problems.append(f"tool name {schema.name!r} is used more than once")
        seen.add(schema.name)
        parameters: Any = schema.parameters
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            problems.append(
                f"tool {schema.name!r}: input_schema must be a JSON schema with type 'object'"
            )
    return problems


def from_message(message: Message) -> LlmResponse:
    """An ``LlmResponse`` from a complete (non-streamed) Anthropic message."""
    text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
    calls = [
        ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {}))
        for block in message.content
        if isinstance(block, ToolUseBlock)
    ]
    return LlmResponse(
        content=text or None,
        tool_calls=calls or None,
        finish_reason=message.stop_reason,
        usage=usage_dict(message.usage),
    )


def usage_dict(usage: Usage | MessageDeltaUsage) -> dict[str, int]:
    """Token counts the API reported; cache counts only when present."""
    counts = {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens,
    }
    if usage.cache_creation_input_tokens is not None:
        counts["cache_creation_input_tokens"] = usage.cache_creation_input_tokens
    if usage.cache_read_input_tokens is not None:
        counts["cache_read_input_tokens"] = usage.cache_read_input_tokens
    return counts
