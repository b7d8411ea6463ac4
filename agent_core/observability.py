"""Observability: the provider contract (spans + metrics) and the ``Tracer`` the agent uses.

Every traced step is one ``async with``, which always closes its span, records its duration
metric and costs nothing when no provider is configured::

    async with tracer.span("agent.tool.execute", metric="agent.tool.duration",
                           tag_attributes=("tool", "success"), tool=name) as span:
        span.set_attribute("success", result.success)
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK

_current_span: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
    "threadline_span", default=None
)


def current_span() -> Span | None:
    """The innermost open span of the running task (``None`` outside any span)."""
    return _current_span.get()


class Span(BaseModel):
    """A timed operation; ``parent_id`` links nested spans."""

    model_config = ConfigDict(defer_build=True)

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    name: str
    start_time: float = Field(default_factory=SYSTEM_CLOCK.now)
    end_time: float | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    parent_id: str | None = None

    def end(self) -> None:
        if self.end_time is None:
            self.end_time = SYSTEM_CLOCK.now()

    def duration_ms(self) -> float | None:
        return None if self.end_time is None else (self.end_time - self.start_time) * 1000

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value


class Metric(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    value: float
    unit: str = ""
    tags: dict[str, str] = Field(default_factory=dict)
    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)


class ObservabilityProvider:
    """Receives spans and metrics; subclass for your backend (see ``LoggingObservabilityProvider``
    and ``OpenTelemetryObservabilityProvider``)."""

    async def record_metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        return None

    async def create_span(self, name: str, attributes: dict[str, Any] | None = None) -> Span:
        return Span(name=name, attributes=attributes or {})

    async def end_span(self, span: Span) -> None:
        span.end()


class _NoSpan:
    """Stands in for a span when nothing is configured."""

    __slots__ = ()
    attributes: Mapping[str, Any] = {}

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    async def __aenter__(self) -> _NoSpan:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


class _LiveSpan:
    __slots__ = (
        "_attributes",
        "_metric",
        "_name",
        "_provider",
        "_span",
        "_tag_keys",
        "_tags",
        "_token",
    )

    def __init__(
        self,
        provider: ObservabilityProvider,
        name: str,
        attributes: dict[str, Any],
        metric: str | None,
        tags: Mapping[str, str] | None,
        tag_keys: tuple[str, ...],
    ) -> None:
        self._provider, self._name, self._attributes = provider, name, attributes
        self._metric, self._tags, self._tag_keys = metric, tags, tag_keys
        self._token: contextvars.Token[Span | None] | None = None

    async def __aenter__(self) -> Span:
        span = await self._provider.create_span(self._name, self._attributes)
        parent = _current_span.get()
        if parent is not None and span.parent_id is None:
            span.parent_id = parent.id
        self._span = span
        self._token = _current_span.set(span)
        return span

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span = self._span
        if exc is not None:
            span.set_attribute("error", type(exc).__name__)
        if self._token is not None:
            try:
                _current_span.reset(self._token)
            except ValueError:  # exited from another context (a resumed generator)
                _current_span.set(None)
        await self._provider.end_span(span)
        if self._metric is not None:
            tags = dict(self._tags or {})
            tags.update({k: str(span.attributes.get(k)) for k in self._tag_keys})
            await self._provider.record_metric(self._metric, span.duration_ms() or 0.0, "ms", tags)


class Tracer:
    """The agent's one way to trace: ``tracer.span(...)`` and ``tracer.metric(...)``.

    >>> import asyncio
    >>> async def demo():
    ...     async with Tracer(None).span("agent.demo", user_id="u1") as span:
    ...         span.set_attribute("ok", True)
    >>> asyncio.run(demo())
    """

    __slots__ = ("provider",)

    def __init__(self, provider: ObservabilityProvider | None) -> None:
        self.provider = provider

    def span(
        self,
        name: str,
        *,
        metric: str | None = None,
        tags: Mapping[str, str] | None = None,
        tag_attributes: tuple[str, ...] = (),
        **attributes: Any,
    ) -> _LiveSpan | _NoSpan:
        if self.provider is None:
            return _NO_SPAN
        return _LiveSpan(self.provider, name, attributes, metric, tags, tag_attributes)

    async def metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        if self.provider is not None:
            await self.provider.record_metric(name, value, unit, tags)


class LoggingObservabilityProvider(ObservabilityProvider):
    """Writes spans (DEBUG) and metrics (INFO) to the ``threadline.observability`` logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("threadline.observability")

    async def record_metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        self.logger.info("METRIC %s=%.3f%s tags=%s", name, value, unit, tags or {})

    async def end_span(self, span: Span) -> None:
        span.end()
        self.logger.debug(
            "SPAN %s id=%s parent=%s duration=%.2fms attrs=%s",
            span.name,
            span.id,
            span.parent_id,
            span.duration_ms() or 0.0,
            span.attributes,
        )
