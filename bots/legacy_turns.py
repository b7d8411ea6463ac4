"""Turns queued before the turn kinds (``bots.turn_kinds``), read as the kinds they are.

A durable queue (Redis, SQLite) may still hold turns that a previous version recorded,
when a new version starts: their payloads have no ``kind``, and said what they were by
their keys. ``upgraded`` rewrites such a payload into the kind it stands for, once, where
``TurnHost`` reads a turn; a payload with a ``kind`` is returned as it is. The old shapes:

    {"scheduled": {...}}                      -> scheduled (the occurrence's fields)
    {"schedule_removed": {...}}               -> schedule_removed
    {"workflow_step": ..., ...}               -> workflow_step (Slack)
    {"resume": id, "ref", "reply_to", "context", "text"}   -> resumed (Teams)
    {"resume": id, "context", ...}            -> resumed (Slack: the rest is where)
    {"activity": ..., "text"} / {"context", "text", ...}   -> question (Teams / Slack)

>>> upgraded({"scheduled": {"schedule_id": "s1"}})
{'kind': 'scheduled', 'schedule_id': 's1'}
>>> upgraded({"context": {"user_id": "U1"}, "text": "hi", "resume": "a1"})
{'kind': 'resumed', 'approval_id': 'a1', 'where': {'context': {'user_id': 'U1'}, 'text': 'hi'}}
>>> upgraded({"kind": "question", "asked": {}}) == {"kind": "question", "asked": {}}
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CARRIED = ("scheduled", "schedule_removed")
"""The schedule kinds, which their payload carried under a key of their own."""


def upgraded(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``payload`` as a turn kind's payload (see the module docstring)."""
    if "kind" in payload:
        return payload
    for kind in CARRIED:
        if isinstance(carried := payload.get(kind), Mapping):
            return {"kind": kind, **carried}
    if "workflow_step" in payload:
        return {"kind": "workflow_step", "step": dict(payload)}
    if "resume" in payload:
        where = {key: value for key, value in payload.items() if key != "resume"}
        if "ref" in where:  # Teams kept only where to reply
            where = {key: where.get(key) for key in ("ref", "reply_to", "context")}
        return {"kind": "resumed", "approval_id": payload["resume"], "where": where}
    return {"kind": "question", "asked": dict(payload)}
