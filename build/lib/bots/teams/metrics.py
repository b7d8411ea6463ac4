"""Prometheus metrics of the Teams bot, in a registry of its own (served on ``/metrics``).

>>> metrics = TeamsMetrics()
>>> metrics.activities.labels(type="message").inc()
>>> b"threadline_teams_activities_total" in metrics.render()
True
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class TeamsMetrics:
    """Counters for activities, refusals, duplicates and turns; one instance per bot.

    >>> TeamsMetrics().duplicates.inc()
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.activities = Counter(
            "threadline_teams_activities",
            "Authenticated activities received, by type",
            ["type"],
            registry=self.registry,
        )
        self.refused = Counter(
            "threadline_teams_refused",
            "Requests refused before a turn (401, 400, 415)",
            ["status"],
            registry=self.registry,
        )
        self.duplicates = Counter(
            "threadline_teams_duplicates",
            "Redelivered activities dropped",
            registry=self.registry,
        )
        self.unavailable = Counter(
            "threadline_teams_unavailable",
            "Activities answered while the state backend was down (the user was told)",
            registry=self.registry,
        )
        self.feedback = Counter(
            "threadline_teams_feedback",
            "Feedback on answers, by reaction",
            ["reaction"],
            registry=self.registry,
        )
        self.turns = Counter(
            "threadline_teams_turns",
            "Turns run, by outcome (completed, stopped, failed, cancelled, interrupted)",
            ["outcome"],
            registry=self.registry,
        )
        self.active_turns = Gauge(
            "threadline_teams_active_turns", "Turns running now", registry=self.registry
        )
        self.ack_seconds = Histogram(
            "threadline_teams_ack_seconds",
            "Time to answer Teams' HTTP request",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
            registry=self.registry,
        )
        self.turn_seconds = Histogram(
            "threadline_teams_turn_seconds",
            "Turn duration from its acceptance to the last message",
            buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160),
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
