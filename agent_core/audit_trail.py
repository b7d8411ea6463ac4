"""``TrailAuditLogger``: the ``AuditLogger`` that keeps every event in the durable,
hash-chained audit trail (``agent_core.state.audit``) and forwards each sealed record.

An event becomes an ``AuditEntry``: the person as their keyed pseudonym (who they are goes
to the store's directory in the same write), the workspace and the conversation, the
profile when the event names one, and the event's details (secrets already redacted by
``AuditLogger``), stamped by the injected clock. The store seals and writes what the turn
queued as soon as the turn yields (``AuditStore.submit``): a turn never waits for a disk or
a round trip per record; a process killed in between loses at most those few
milliseconds of records, and the chain stays whole. Forwarders receive the sealed record: a
JSONL file (``JsonlForwarder``) or OpenTelemetry logs (``OtelForwarder``, with the ``otel``
extra).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from agent_core.audit import AuditEvent, AuditLogger
from agent_core.audit_chain import AuditEntry, AuditRecord
from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.state.audit import AuditStore

logger = logging.getLogger("threadline.audit")


class AuditForwarder(Protocol):
    """Somewhere else each sealed record goes (after the store kept it)."""

    async def forward(self, record: AuditRecord) -> None: ...


def workspace_of(*ids: str) -> str | None:
    """``slack:T1`` / ``teams:tenant`` from the first id that starts with a channel.

    >>> workspace_of("", "slack:T1:C1:1700000000.1")
    'slack:T1'
    >>> workspace_of("console:u") is None
    True
    """
    for value in ids:
        platform, _, rest = value.partition(":")
        if platform in ("slack", "teams") and rest:
            return f"{platform}:{rest.split(':', 1)[0]}"
    return None


class TrailAuditLogger(AuditLogger):
    """See the module docstring.

    >>> import asyncio
    >>> from agent_core.state.audit import MemoryAuditStore
    >>> from agent_core.users import User
    >>> store = MemoryAuditStore()
    >>> audit = TrailAuditLogger(store)
    >>> asyncio.run(audit.log_question(User(id="slack:T1:U1"), conversation_id="slack:T1:C1:1",
    ...     request_id="r", text="revenue?", include_text=False))
    >>> record = asyncio.run(store.records())[0]
    >>> record.kind, record.workspace, record.person.startswith("p:"), record.details
    ('question', 'slack:T1', True, {'length': 8, 'request_id': 'r'})
    """

    def __init__(
        self,
        store: AuditStore,
        *,
        forwarders: Sequence[AuditForwarder] = (),
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.forwarders = list(forwarders)
        self.clock = clock or SYSTEM_CLOCK
        store.on_written += [forwarder.forward for forwarder in self.forwarders]

    async def log_event(self, event: AuditEvent) -> None:
        pseudonyms = await self.store.pseudonyms()
        details: dict[str, Any] = dict(event.details)
        profile = details.pop("profile", None)
        details["request_id"] = event.request_id
        if event.user_groups:
            details["groups"] = event.user_groups
        if event.redacted_fields:
            details["redacted_fields"] = event.redacted_fields
        entry = AuditEntry.model_construct(  # our own values: no validation on the turn's path
            at=self.clock.now(),
            kind=str(event.event_type),
            person=pseudonyms.of(event.user_id),
            workspace=workspace_of(event.conversation_id, event.user_id),
            profile=profile if isinstance(profile, str) else None,
            conversation=event.conversation_id or None,
            details=details,
        )
        identity = {"id": event.user_id, "name": event.username or "", "email": event.user_email}
        # sealed and written by the store's writer as soon as the turn yields (one step for
        # all queued); the state's close writes what is left
        self.store.submit(entry, identity={key: value for key, value in identity.items() if value})


class JsonlForwarder:
    """Appends each sealed record as one JSON line to ``path`` (a SIEM can tail it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._lock = asyncio.Lock()

    async def forward(self, record: AuditRecord) -> None:
        line = json.dumps(record.model_dump(mode="json"), sort_keys=True) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._write, line)

    def _write(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line)


class OtelForwarder:
    """Emits each sealed record as an OpenTelemetry log record (``threadline.audit``) through
    the globally configured logger provider (the ``otel`` extra)."""

    def __init__(self) -> None:
        from opentelemetry import _logs

        self._logger = _logs.get_logger("threadline.audit")

    async def forward(self, record: AuditRecord) -> None:
        from opentelemetry._logs import LogRecord

        attributes = {
            f"threadline.audit.{key}": value
            for key, value in record.model_dump(exclude={"details"}).items()
            if value is not None
        }
        body = json.dumps(record.details, sort_keys=True)
        self._logger.emit(LogRecord(body=body, attributes=attributes))


class FanOutAuditLogger(AuditLogger):
    """Every event to each of ``loggers`` in turn (an agent's own logger and the trail)."""

    def __init__(self, loggers: Sequence[AuditLogger]) -> None:
        self.loggers = list(loggers)

    async def log_event(self, event: AuditEvent) -> None:
        for each in self.loggers:
            await each.log_event(event)
