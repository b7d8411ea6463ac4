"""The LLM contract: ``LlmService`` and the request / response / chunk models."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.tool_contract import ToolCall, ToolSchema
from agent_core.users import User

LlmRole = Literal["system", "user", "assistant", "tool"]


class LlmMessage(BaseModel):
    """One message in the LLM's view of the conversation."""

    model_config = ConfigDict(defer_build=True)

    role: LlmRole
    content: str = ""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class LlmRequest(BaseModel):
    """What the agent asks the LLM: history, tools, sampling settings, system prompt."""

    model_config = ConfigDict(defer_build=True)

    messages: list[LlmMessage]
    tools: list[ToolSchema] | None = None
    user: User
    stream: bool = False
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    system_prompt: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class LlmResponse(BaseModel):
    """A complete answer: text and/or tool calls, with token ``usage`` when known."""

    model_config = ConfigDict(defer_build=True)

    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def is_tool_call(self) -> bool:
        return bool(self.tool_calls)


class LlmStreamChunk(BaseModel):
    """A piece of a streamed answer: a text delta, finished tool calls, or the end."""

    model_config = ConfigDict(defer_build=True)

    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class LlmService(ABC):
    """An LLM provider. Implement both calls; raise ``agent_core.errors.LlmError`` subclasses.

    ``stream_request`` yields text deltas as they arrive and each tool call once complete.
    ``provider`` names where the model runs (OpenTelemetry's ``gen_ai.provider.name``:
    ``anthropic``, ``aws.bedrock``, ``gcp.vertex_ai``, ``azure.ai.inference``...).
    """

    provider: str = "custom"

    @abstractmethod
    async def send_request(self, request: LlmRequest) -> LlmResponse: ...

    @abstractmethod
    def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]: ...

    async def validate_tools(self, tools: list[ToolSchema]) -> list[str]:
        """Problems with ``tools`` for this provider (empty when all are acceptable)."""
        return []

    @property
    def model_name(self) -> str:
        return type(self).__name__
