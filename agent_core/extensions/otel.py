"""``OpenTelemetryObservabilityProvider``: Threadline's spans and metrics as OpenTelemetry data.

Needs the ``otel`` extra (``pip install 'threadline[otel]'``, i.e. ``opentelemetry-api``);
the package is imported when the provider is built, so ``agent_core`` imports without it.
Exporters, samplers and resources are configured on the OpenTelemetry SDK as usual; pass
its ``TracerProvider`` / ``MeterProvider`` or let the globally registered ones be used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_core.observability import ObservabilityProvider, Span, current_span

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span as OtelSpan
    from opentelemetry.trace import TracerProvider
    from opentelemetry.util.types import AttributeValue

INSTALL_HINT = "pip install 'threadline[otel]'"
_PRIMITIVES = (str, bool, int, float)


def otel_attribute_value(value: Any) -> AttributeValue | None:
    """``value`` as an OpenTelemetry attribute: primitives and homogeneous sequences of them
    pass through, other sequences become lists of strings, anything else ``str(value)``;
    ``None`` is dropped (returned as ``None``).

    >>> otel_attribute_value([1, 2]), otel_attribute_value([1, "a"]), otel_attribute_value({})
    ([1, 2], ['1', 'a'], '{}')
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        items = [item for item in value if item is not None]
        kinds = {type(item) for item in items}
        if len(kinds) == 1 and kinds <= set(_PRIMITIVES):
            return items
        return [str(item) for item in items]
    return str(value)


def otel_attributes(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """Attributes ready for OpenTelemetry: values converted, ``None`` values dropped."""
    cleaned: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        converted = otel_attribute_value(value)
        if converted is not None:
            cleaned[str(key)] = converted
    return cleaned


def _error_description(attributes: Mapping[str, Any]) -> str | None:
    """Why a span failed, or ``None``: the Tracer's ``error`` attribute (exception class or
    a tool's error) or the error handler's ``error_type`` / ``error_message``."""
    error = attributes.get("error")
    if error not in (None, False, ""):
        return str(error)
    error_type = attributes.get("error_type")
    if error_type:
        message = attributes.get("error_message")
        return f"{error_type}: {message}" if message else str(error_type)
    return None


def _nanoseconds(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class OpenTelemetryObservabilityProvider(ObservabilityProvider):
    """Maps each Threadline ``Span`` to an OpenTelemetry span and each metric to an instrument:
    histograms for durations and token counts, counters for ``unit="count"``.

    A span's parent is the Threadline span that is open around it (the one the ``Tracer``
    records as ``parent_id``) when this provider started it and it is still open; otherwise
    OpenTelemetry's current context, so a turn nests under e.g. your web framework's span.
    Attributes given at creation are set at start, the final ``Span.attributes`` at the end;
    an ``error`` (or ``error_type``) attribute sets the span status to ERROR.

    >>> import asyncio
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from agent_core.observability import Tracer
    >>> provider = OpenTelemetryObservabilityProvider(tracer_provider=TracerProvider())
    >>> async def traced():  # what the agent does with Agent(..., observability_provider=...)
    ...     async with Tracer(provider).span("agent.demo", user_id="u1") as span:
    ...         span.set_attribute("ok", True)
    >>> asyncio.run(traced())
    >>> provider.open_span_count
    0
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        instrumentation_name: str = "threadline",
    ) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as missing:
            raise ImportError(
                f"OpenTelemetryObservabilityProvider needs opentelemetry-api: {INSTALL_HINT}"
            ) from missing

        self._tracer = trace.get_tracer(instrumentation_name, tracer_provider=tracer_provider)
        self._meter = metrics.get_meter(instrumentation_name, meter_provider=meter_provider)
        self._open: dict[str, OtelSpan] = {}
        self._counters: dict[str, Counter] = {}
        self._histograms: dict[str, Histogram] = {}

    @property
    def open_span_count(self) -> int:
        """Spans started and not yet ended (0 between turns; a leak shows here)."""
        return len(self._open)

    async def create_span(self, name: str, attributes: dict[str, Any] | None = None) -> Span:
        from opentelemetry import trace

        span = Span(name=name, attributes=dict(attributes or {}))
        # The Tracer sets ``parent_id`` only after this returns, to the span that is current
        # now; OpenTelemetry needs the parent at start, so read the same context variable.
        parent = current_span()
        parent_otel = self._open.get(parent.id) if parent is not None else None
        if parent is not None and parent_otel is not None:
            span.parent_id = parent.id
        context = trace.set_span_in_context(parent_otel) if parent_otel is not None else None
        self._open[span.id] = self._tracer.start_span(
            name,
            context=context,
            attributes=otel_attributes(span.attributes),
            start_time=_nanoseconds(span.start_time),
        )
        return span

    async def end_span(self, span: Span) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.end()
        otel_span = self._open.pop(span.id, None)
        if otel_span is None:  # not started here, or already ended
            return
        otel_span.set_attributes(otel_attributes(span.attributes))
        if (error := _error_description(span.attributes)) is not None:
            otel_span.set_status(Status(StatusCode.ERROR, error))
        end_time = span.end_time if span.end_time is not None else span.start_time
        otel_span.end(end_time=_nanoseconds(end_time))

    async def record_metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        """Add to the counter or record in the histogram named ``name``, created on first use:
        a counter for ``unit="count"``, else a histogram (``ms``, ``tokens``, ...)."""
        attributes = otel_attributes(tags or {})
        if (counter := self._counters.get(name)) is not None:
            counter.add(value, attributes)
        elif (histogram := self._histograms.get(name)) is not None:
            histogram.record(value, attributes)
        elif unit == "count":
            counter = self._counters[name] = self._meter.create_counter(name, unit=unit)
            counter.add(value, attributes)
        else:
            histogram = self._histograms[name] = self._meter.create_histogram(name, unit=unit)
            histogram.record(value, attributes)
