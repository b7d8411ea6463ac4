"""OpenTelemetry's GenAI semantic conventions for an LLM call's span.

The ``llm.request`` / ``llm.stream`` span of every call carries what the conventions name:
the operation, the provider, the model asked for, the request's token limit, and from the
answer the token counts (cache reads and writes too) and why it finished. An exporter that
knows the conventions (``OpenTelemetryObservabilityProvider``) shows them as an LLM call.

>>> from agent_core.llm.base import LlmResponse
>>> attributes = response_attributes(LlmResponse(
...     content="Hi", finish_reason="end_turn", usage={"input_tokens": 12, "output_tokens": 7}))
>>> attributes["gen_ai.response.finish_reasons"], attributes["gen_ai.usage.output_tokens"]
(['end_turn'], 7)
"""

from __future__ import annotations

from typing import Any

from agent_core.llm.base import LlmRequest, LlmResponse, LlmService

GEN_AI_PROVIDERS = {
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex": "gcp.vertex_ai",
    "foundry": "azure.ai.inference",
}
"""Threadline's provider names as ``gen_ai.provider.name`` spells them."""

_USAGE = {
    "input_tokens": "gen_ai.usage.input_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
    "cache_read_input_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation_input_tokens": "gen_ai.usage.cache_creation.input_tokens",
}


def request_attributes(service: LlmService, request: LlmRequest) -> dict[str, Any]:
    """What is known before the call."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": GEN_AI_PROVIDERS.get(service.provider, service.provider),
        "gen_ai.request.model": service.model_name,
    }
    if request.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    return attributes


def response_attributes(response: LlmResponse) -> dict[str, Any]:
    """What the answer said: why it finished, and the tokens it used."""
    attributes: dict[str, Any] = {}
    if response.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [response.finish_reason]
    for name, attribute in _USAGE.items():
        if response.usage and name in response.usage:
            attributes[attribute] = response.usage[name]
    return attributes
