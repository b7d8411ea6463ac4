"""``ChannelMetrics``: the Prometheus metrics of a channel's bot, the same in every channel.

Served on ``/metrics`` from a registry of the bot's own; every name starts with
``threadline_<channel>_`` and means the same in Slack and Teams::

    events{kind}        deliveries received, by kind (Slack event type, command, click;
                        Teams activity type)
    refused{status}     requests refused before verification (401) or unreadable (400, 415)
    dropped{reason}     verified deliveries acknowledged but not served (malformed, failed)
    duplicates          retried or redelivered deliveries dropped
    unavailable         deliveries answered while the state was down (the asker was told)
    feedback{reaction}  thumbs up / down on answers
    turns{outcome}      turns, by how they ended: completed, stopped (the asker's or the
                        platform's Stop), failed, cancelled (a shutdown or a lost lease:
                        run again), interrupted (given up after repeated crashes)
    active_turns        turns this process is answering now
    ack_seconds         from the request's arrival to the platform's acknowledgement
    turn_seconds        from the acknowledgement (the turn recorded) to the reply's last
                        post, for turns that ran (completed, stopped, failed)

The console measures nothing (``measured=False``: the same calls, no registry), so the base
install needs no ``prometheus-client``.

>>> metrics = ChannelMetrics("slack")
>>> metrics.events.labels(kind="app_mention").inc()
>>> b'threadline_slack_events_total{kind="app_mention"} 1.0' in metrics.render()
True
>>> ChannelMetrics("console", measured=False).render()
b''
"""

from __future__ import annotations

from typing import Any

TURN_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160)
ACK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5)


class ChannelMetrics:
    """One channel bot's metrics; see the module docstring."""

    # Prometheus metrics, or ``_Unmeasured`` stand-ins (which take the same calls)
    events: Any
    refused: Any
    dropped: Any
    duplicates: Any
    unavailable: Any
    feedback: Any
    turns: Any
    active_turns: Any
    ack_seconds: Any
    turn_seconds: Any

    def __init__(self, channel: str, *, registry: Any = None, measured: bool = True) -> None:
        self.channel = channel
        self.registry = registry
        if not measured:
            self._unmeasured()
            return
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry or CollectorRegistry()
        name = f"threadline_{channel}_"
        into = {"registry": self.registry}
        self.events = Counter(name + "events", "Deliveries received, by kind", ["kind"], **into)
        self.refused = Counter(
            name + "refused", "Requests refused before verification, by status", ["status"], **into
        )
        self.dropped = Counter(
            name + "dropped", "Verified deliveries acknowledged, not served", ["reason"], **into
        )
        self.duplicates = Counter(name + "duplicates", "Redelivered deliveries dropped", **into)
        self.unavailable = Counter(
            name + "unavailable", "Deliveries answered while the state was down", **into
        )
        self.feedback = Counter(name + "feedback", "Feedback on answers", ["reaction"], **into)
        self.turns = Counter(name + "turns", "Turns, by how they ended", ["outcome"], **into)
        self.active_turns = Gauge(name + "active_turns", "Turns running now", **into)
        self.ack_seconds = Histogram(
            name + "ack_seconds", "Request arrival to acknowledgement", buckets=ACK_BUCKETS, **into
        )
        self.turn_seconds = Histogram(
            name + "turn_seconds",
            "Acknowledgement (the turn recorded) to the reply's last post",
            buckets=TURN_BUCKETS,
            **into,
        )

    def _unmeasured(self) -> None:
        nothing = _Unmeasured()
        self.events = self.refused = self.dropped = self.duplicates = nothing
        self.unavailable = self.feedback = self.turns = self.active_turns = nothing
        self.ack_seconds = self.turn_seconds = nothing

    def render(self) -> bytes:
        """The metrics in Prometheus' text format (empty when unmeasured)."""
        if self.registry is None:
            return b""
        from prometheus_client import generate_latest

        return bytes(generate_latest(self.registry))


class _Unmeasured:
    """Takes every call a Prometheus metric takes, and keeps nothing."""

    def labels(self, **labels: str) -> _Unmeasured:
        return self

    def inc(self, amount: float = 1) -> None:
        return None

    def dec(self, amount: float = 1) -> None:
        return None

    def observe(self, amount: float) -> None:
        return None
