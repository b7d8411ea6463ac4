"""The audit trail, wired into every agent a command serves.

``attach_audit(served, state, settings)`` gives each served agent (each profile's) a
``TrailAuditLogger`` over ``state.audit`` (SQLite in one process, a Redis stream across
many), beside any audit logger the agent brought, forwarding to ``[audit] jsonl`` and
OpenTelemetry when set. ``threadline audit`` (``bots.audit_command``) reads it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.audit_settings import AuditSettings
    from agent_core.audit_trail import AuditForwarder, TrailAuditLogger
    from agent_core.state_factory import State
    from bots.profiles import ProfileRouter


def trail_logger(state: State, settings: AuditSettings) -> TrailAuditLogger:
    """The trail over ``state.audit`` with the configured forwarders."""
    from agent_core.audit_trail import JsonlForwarder, OtelForwarder, TrailAuditLogger

    forwarders: list[AuditForwarder] = []
    if settings.jsonl is not None:
        forwarders.append(JsonlForwarder(settings.jsonl))
    if settings.otel:
        forwarders.append(OtelForwarder())
    return TrailAuditLogger(state.audit, forwarders=forwarders)


def attach_audit(served: Agent | ProfileRouter, state: State, settings: AuditSettings) -> None:
    """The trail on every agent of ``served`` (see the module)."""
    from agent_core.audit_trail import FanOutAuditLogger
    from bots.usage import _profiled

    if not settings.trail:
        return
    trail = trail_logger(state, settings)
    for _, agent in _profiled(served):
        own = agent.audit_logger
        logger = trail if own is None else FanOutAuditLogger([own, trail])
        config = agent.config.audit_config.model_copy(
            update={"enabled": True, "include_question_text": settings.include_question_text}
        )
        agent.config = agent.config.model_copy(update={"audit_config": config})
        agent.audit_logger = logger
        agent.tool_registry.audit_logger = logger
        agent.tool_registry.audit_config = config
