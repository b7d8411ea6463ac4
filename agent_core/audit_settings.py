"""``[audit]``: the audit trail every served agent writes, and where it is forwarded.

::

    [audit]
    trail = true                      # the default: kept in the state store, hash-chained
    include_question_text = false     # the default: a question's length, not its words
    jsonl = "/var/log/threadline/audit.jsonl"   # also append each record here
    otel = true                       # also emit each as an OpenTelemetry log record

>>> AuditSettings().trail, AuditSettings().jsonl is None
(True, True)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent_core.settings import Section, env


class AuditSettings(Section):
    """``[audit]`` (see the module docstring)."""

    table = "audit"

    trail: bool = Field(True, validation_alias=env("trail", "THREADLINE_AUDIT"))
    """Keep every question, tool call, approval, command, refusal, sign-in, budget stop and
    erase in the hash-chained trail of the state store (``threadline audit``)."""
    include_question_text: bool = Field(
        False, validation_alias=env("include_question_text", "THREADLINE_AUDIT_QUESTION_TEXT")
    )
    """Keep what was asked in each question's record (off: who, where, how long)."""
    jsonl: Path | None = Field(None, validation_alias=env("jsonl", "THREADLINE_AUDIT_JSONL"))
    """Also append each sealed record to this JSON Lines file."""
    otel: bool = Field(False, validation_alias=env("otel", "THREADLINE_AUDIT_OTEL"))
    """Also emit each sealed record as an OpenTelemetry log record (the ``otel`` extra)."""
