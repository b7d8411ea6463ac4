"""LLM spans carry OpenTelemetry's GenAI semantic-convention attributes (issue 28, item 3):
the real Agent, the real SDK against the fake Bedrock, exported by the real OTel SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_core import AgentConfig
from agent_core.extensions.otel import OpenTelemetryObservabilityProvider
from agent_core.llm.testing import Reply, Text, ToolUse
from tests.llm.platforms import Platform, running
from tests.llm.test_anthropic_agent import build_agent, run


@pytest.fixture
async def bedrock() -> AsyncIterator[Platform]:
    async with running("bedrock") as platform:
        yield platform


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unstreamed"])
async def test_each_llm_call_is_a_gen_ai_span(bedrock: Platform, streamed: bool) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability = OpenTelemetryObservabilityProvider(tracer_provider=tracer_provider)
    bedrock.fake.queue(
        Reply([Text(["Looking."]), ToolUse("lookup_customer", {"customer_id": 7})]),
        Reply.text("Ada."),
    )
    agent = build_agent(
        bedrock.service(),
        config=AgentConfig(stream_responses=streamed, max_tokens=512),
        observability_provider=observability,
    )
    await run(agent, "Who is customer 7?")
    name = "llm.stream" if streamed else "llm.request"
    first, second = [s for s in exporter.get_finished_spans() if s.name == name]
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "aws.bedrock"
    assert attributes["gen_ai.request.model"] == bedrock.model
    assert attributes["gen_ai.request.max_tokens"] == 512
    assert attributes["gen_ai.usage.input_tokens"] == 12
    assert attributes["gen_ai.usage.output_tokens"] == 7
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 0
    assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("tool_use",)
    assert tuple((second.attributes or {})["gen_ai.response.finish_reasons"]) == ("end_turn",)
    tracer_provider.shutdown()
