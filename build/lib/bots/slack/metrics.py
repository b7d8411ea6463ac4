"""Prometheus metrics of the Slack bot, in a registry of its own (served on ``/metrics``).

>>> metrics = SlackMetrics()
>>> metrics.events.labels(kind="app_mention").inc()
>>> b"threadline_slack_events_total" in metrics.render()
True
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class SlackMetrics:
    """Counters for events, duplicates and turns; one instance per bot."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.events = Counter(
            "threadline_slack_events",
            "Slack events and interactions received, by kind",
            ["kind"],
            registry=self.registry,
        )
        self.duplicates = Counter(
            "threadline_slack_duplicates",
            "Retried or duplicate deliveries dropped",
            registry=self.registry,
        )
        self.turns = Counter(
            "threadline_slack_turns",
            "Turns run, by outcome (completed, stopped, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.active_turns = Gauge(
            "threadline_slack_active_turns", "Turns running now", registry=self.registry
        )
        self.turn_seconds = Histogram(
            "threadline_slack_turn_seconds",
            "Turn duration from ack to the last Web API call",
            buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160),
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
