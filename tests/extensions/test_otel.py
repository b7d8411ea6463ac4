"""``OpenTelemetryObservabilityProvider`` against the real OpenTelemetry SDK (in-memory export)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_core import ScriptedLlmService, ScriptedResponse, Span
from agent_core.extensions.otel import OpenTelemetryObservabilityProvider
from agent_core.observability import Tracer

from .conftest import FakeRunSql, build_agent, final_text, run_turn


@dataclass
class Otel:
    provider: OpenTelemetryObservabilityProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    @property
    def tracer(self) -> Tracer:
        return Tracer(self.provider)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name in (None, s.name)]

    def span(self, name: str) -> ReadableSpan:
        (found,) = self.spans(name)
        return found

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    provider = OpenTelemetryObservabilityProvider(
        tracer_provider=tracer_provider, meter_provider=meter_provider
    )
    yield Otel(provider, exporter, reader, tracer_provider)
    meter_provider.shutdown()
    tracer_provider.shutdown()


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_nested_spans_become_parent_and_child(otel: Otel) -> None:
    async with otel.tracer.span("outer") as outer:
        async with otel.tracer.span("inner") as inner:
            pass
    exported_outer, exported_inner = otel.span("outer"), otel.span("inner")
    assert exported_outer.context is not None and exported_inner.context is not None
    assert parent_of(exported_inner) == exported_outer.context.span_id
    assert exported_inner.context.trace_id == exported_outer.context.trace_id
    assert exported_outer.parent is None
    assert isinstance(inner, Span) and isinstance(outer, Span)
    assert inner.parent_id == outer.id
    assert otel.provider.open_span_count == 0


async def test_concurrent_children_share_their_open_parent(otel: Otel) -> None:
    async def child(name: str) -> None:
        async with otel.tracer.span(name):
            await asyncio.sleep(0)

    async with otel.tracer.span("parent"):
        await asyncio.gather(child("a"), child("b"))
    parent = otel.span("parent")
    assert parent.context is not None
    assert parent_of(otel.span("a")) == parent_of(otel.span("b")) == parent.context.span_id


async def test_a_span_without_threadline_parent_nests_under_the_current_otel_span(
    otel: Otel,
) -> None:
    outside = otel.tracer_provider.get_tracer("web")
    with outside.start_as_current_span("http.request") as request_span:
        async with otel.tracer.span("agent.send_message"):
            pass
    assert parent_of(otel.span("agent.send_message")) == request_span.get_span_context().span_id


async def test_ended_parent_is_not_used(otel: Otel) -> None:
    """A span created under a Threadline span that already ended (e.g. context left stale by
    a resumed generator) must not point at an exported span."""
    parent = await otel.provider.create_span("parent")
    await otel.provider.end_span(parent)
    from agent_core.observability import _current_span

    token = _current_span.set(parent)
    try:
        orphan = await otel.provider.create_span("orphan")
    finally:
        _current_span.reset(token)
    await otel.provider.end_span(orphan)
    assert otel.span("orphan").parent is None
    assert orphan.parent_id is None


async def test_attributes_at_start_and_end_are_converted(otel: Otel) -> None:
    async with otel.tracer.span(
        "agent.tool.execute", tool="run_sql", arg_count=2, nothing=None
    ) as span:
        span.set_attribute("success", True)
        span.set_attribute("latency", 1.5)
        span.set_attribute("groups", ("admin", "user"))
        span.set_attribute("mixed", [1, "a", None])
        span.set_attribute("details", {"rows": 3})
        span.set_attribute("error", None)
    attributes = dict(otel.span("agent.tool.execute").attributes or {})
    assert attributes == {
        "tool": "run_sql",
        "arg_count": 2,
        "success": True,
        "latency": 1.5,
        "groups": ("admin", "user"),
        "mixed": ("1", "a"),
        "details": "{'rows': 3}",
    }
    assert otel.span("agent.tool.execute").status.status_code is StatusCode.UNSET


async def test_attributes_are_set_when_the_span_starts(otel: Otel) -> None:
    """Samplers and span processors see the creation attributes at start."""
    seen: dict[str, Any] = {}

    class OnStart(SimpleSpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            seen.update(span.attributes)

    otel.tracer_provider.add_span_processor(OnStart(InMemorySpanExporter()))
    async with otel.tracer.span("agent.user_resolution", has_context=True):
        pass
    assert seen == {"has_context": True}


async def test_an_exception_sets_error_status(otel: Otel) -> None:
    with pytest.raises(ValueError):
        async with otel.tracer.span("agent.tool.execute"):
            raise ValueError("boom")
    status = otel.span("agent.tool.execute").status
    assert status.status_code is StatusCode.ERROR
    assert status.description == "ValueError"


async def test_error_attributes_set_error_status(otel: Otel) -> None:
    async with otel.tracer.span("agent.tool.execute", tool="run_sql") as span:
        span.set_attribute("error", "syntax error")
    async with otel.tracer.span(
        "agent.send_message.error", error_type="LlmError", error_message="overloaded"
    ):
        pass
    assert otel.span("agent.tool.execute").status.description == "syntax error"
    failed = otel.span("agent.send_message.error").status
    assert failed.status_code is StatusCode.ERROR
    assert failed.description == "LlmError: overloaded"


async def test_durations_and_tokens_are_histograms(otel: Otel) -> None:
    await otel.provider.record_metric("agent.tool.duration", 10.0, "ms", {"tool": "run_sql"})
    await otel.provider.record_metric("agent.tool.duration", 30.0, "ms", {"tool": "run_sql"})
    await otel.provider.record_metric("llm.tokens", 120, "tokens")
    (point,) = otel.points("agent.tool.duration")
    assert (point.count, point.sum, point.min, point.max) == (2, 40.0, 10.0, 30.0)
    assert dict(point.attributes) == {"tool": "run_sql"}
    (tokens,) = otel.points("llm.tokens")
    assert tokens.sum == 120


async def test_count_metrics_are_counters_cached_by_name(otel: Otel) -> None:
    for error_type in ("LlmError", "LlmError", "AgentError"):
        await otel.provider.record_metric(
            "agent.error.count", 1, "count", {"error_type": error_type}
        )
    values = {p.attributes["error_type"]: p.value for p in otel.points("agent.error.count")}
    assert values == {"LlmError": 1 + 1, "AgentError": 1}


async def test_a_real_turn_emits_the_spec_spans_and_metrics(otel: Otel) -> None:
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tools(
                ("run_sql", {"sql": "SELECT 1"}), ("run_sql", {"sql": "SELECT 2"})
            ),
            "There are 2 answers.",
        ]
    )
    agent = build_agent(llm, FakeRunSql(asyncio.Barrier(2)), observability_provider=otel.provider)
    components = await run_turn(agent, "How many?")
    assert final_text(components) == "There are 2 answers."

    root = otel.span("agent.send_message")
    assert root.context is not None and root.parent is None
    assert parent_of(otel.span("agent.user_resolution")) == root.context.span_id
    streams = otel.spans("llm.stream")
    assert len(streams) == 2
    assert {parent_of(s) for s in streams} == {root.context.span_id}
    tool_spans = otel.spans("agent.tool.execute")
    assert [s.attributes["success"] for s in tool_spans if s.attributes] == [True, True]
    assert {parent_of(s) for s in tool_spans} == {root.context.span_id}
    assert {s.context.trace_id for s in otel.spans() if s.context} == {root.context.trace_id}
    assert dict(root.attributes or {})["user_id"] == "u-ana"
    assert otel.provider.open_span_count == 0

    (message,) = otel.points("agent.message.duration")
    assert message.count == 1
    assert dict(message.attributes) == {"user_id": "u-ana", "hit_tool_limit": "False"}
    assert sum(p.count for p in otel.points("agent.tool.duration")) == 2


def test_agent_core_imports_without_opentelemetry() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "import agent_core, agent_core.extensions.otel as otel\n"
        "try:\n"
        "    otel.OpenTelemetryObservabilityProvider()\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'threadline[otel]'" in done.stdout
