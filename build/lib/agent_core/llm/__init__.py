"""LLM services: the contract, the scripted test double; ``agent_core.llm.anthropic`` holds
the Claude service (imported on use, so the SDK never slows ``import agent_core``)."""

from agent_core.llm.base import LlmMessage, LlmRequest, LlmResponse, LlmService, LlmStreamChunk
from agent_core.llm.scripted import ScriptedLlmService, ScriptedResponse

__all__ = [
    "LlmMessage",
    "LlmRequest",
    "LlmResponse",
    "LlmService",
    "LlmStreamChunk",
    "ScriptedLlmService",
    "ScriptedResponse",
]
