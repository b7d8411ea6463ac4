"""Audit trail: who checked, ran and saw what, with secrets redacted from tool parameters.

The agent wires its ``AuditLogger`` into the ``ToolRegistry`` (access check, invocation,
result) and records AI responses, UI feature checks and feedback itself.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK
from agent_core.users import User

if TYPE_CHECKING:
    from agent_core.approvals.record import ApprovalRecord
    from agent_core.context import ToolContext
    from agent_core.feedback import Feedback
    from agent_core.tool_contract import ToolCall, ToolResult

SENSITIVE_KEY = re.compile(
    r"pass(word|wd)?|secret|token|api[_-]?key|credential|authori[sz]ation|private[_-]?key|cookie",
    re.IGNORECASE,
)
REDACTED = "[REDACTED]"


def redact_secrets(value: Any) -> tuple[Any, list[str]]:
    """Redact values under sensitive-looking keys, recursively; returns (clean, redacted paths).

    >>> redact_secrets({"sql": "select 1", "db": {"password": "hunter2"}})
    ({'sql': 'select 1', 'db': {'password': '[REDACTED]'}}, ['db.password'])
    """
    redacted: list[str] = []

    def clean(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, item in node.items():
                here = f"{path}.{key}" if path else str(key)
                if SENSITIVE_KEY.search(str(key)):
                    out[key] = REDACTED
                    redacted.append(here)
                else:
                    out[key] = clean(item, here)
            return out
        if isinstance(node, list):
            return [clean(item, f"{path}[{i}]") for i, item in enumerate(node)]
        return node

    return clean(value, ""), redacted


class AuditEventType(StrEnum):
    TOOL_ACCESS_CHECK = "tool_access_check"
    TOOL_INVOCATION = "tool_invocation"
    TOOL_RESULT = "tool_result"
    UI_FEATURE_ACCESS_CHECK = "ui_feature_access_check"
    AI_RESPONSE_GENERATED = "ai_response_generated"
    FEEDBACK = "feedback"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    QUESTION = "question"
    ADMIN_COMMAND = "admin_command"
    REFUSAL = "refusal"
    BUDGET_STOP = "budget_stop"
    SIGN_IN = "sign_in"
    ERASE = "erase"
    OUTSIDER_REFUSED = "outsider_refused"


class AuditEvent(BaseModel):
    """One audited fact; ``details`` holds the event-specific fields."""

    model_config = ConfigDict(defer_build=True)

    event_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    event_type: AuditEventType
    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)
    user_id: str
    username: str | None = None
    user_email: str | None = None
    user_groups: list[str] = Field(default_factory=list)
    user_organisation: str | None = None
    """The asker's own organisation when the channel says (Slack workspace, Entra tenant)."""
    conversation_id: str
    request_id: str
    details: dict[str, Any] = Field(default_factory=dict)
    redacted_fields: list[str] = Field(default_factory=list)


class AuditLogger:
    """Implement ``log_event`` to send events anywhere; the helpers build the events.

    >>> import asyncio
    >>> from agent_core.users import User
    >>> log = InMemoryAuditLogger()
    >>> asyncio.run(log.log_ui_feature_access(User(id="u"), "tool_arguments", False, ["admin"],
    ...                                       conversation_id="c", request_id="r"))
    >>> log.events[0].details["access_granted"]
    False
    """

    async def log_event(self, event: AuditEvent) -> None:
        raise NotImplementedError

    @staticmethod
    def _base(user: User, conversation_id: str, request_id: str) -> dict[str, Any]:
        return {
            "user_id": user.id,
            "username": user.username,
            "user_email": user.email,
            "user_groups": list(user.group_memberships),
            "user_organisation": user.metadata.get("organisation"),
            "conversation_id": conversation_id,
            "request_id": request_id,
        }

    async def log_outsider_refused(
        self, user: User, *, conversation_id: str, request_id: str
    ) -> None:
        """A person of another organisation (or anonymous) was refused: nothing ran."""
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.OUTSIDER_REFUSED,
                **self._base(user, conversation_id, request_id),
                details={"external": bool(user.metadata.get("is_external", True))},
            )
        )

    async def log_tool_access_check(
        self,
        user: User,
        tool_name: str,
        access_granted: bool,
        required_groups: list[str],
        context: ToolContext,
        reason: str | None = None,
    ) -> None:
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.TOOL_ACCESS_CHECK,
                **self._base(user, context.conversation_id, context.request_id),
                details={
                    "tool_name": tool_name,
                    "access_granted": access_granted,
                    "required_groups": required_groups,
                    "reason": reason,
                },
            )
        )

    async def log_tool_invocation(
        self,
        user: User,
        tool_call: ToolCall,
        ui_features: list[str],
        context: ToolContext,
        sanitize_parameters: bool = True,
    ) -> None:
        parameters, redacted = (
            redact_secrets(tool_call.arguments)
            if sanitize_parameters
            else (tool_call.arguments, [])
        )
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.TOOL_INVOCATION,
                **self._base(user, context.conversation_id, context.request_id),
                details={
                    "tool_call_id": tool_call.id,
                    "tool_name": tool_call.name,
                    "parameters": parameters,
                    "ui_features_available": ui_features,
                },
                redacted_fields=redacted,
            )
        )

    async def log_tool_result(
        self, user: User, tool_call: ToolCall, result: ToolResult, context: ToolContext
    ) -> None:
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.TOOL_RESULT,
                **self._base(user, context.conversation_id, context.request_id),
                details={
                    "tool_call_id": tool_call.id,
                    "tool_name": tool_call.name,
                    "success": result.success,
                    "error": result.error,
                    "execution_time_ms": result.metadata.get("execution_time_ms", 0.0),
                    "result_size_bytes": len(result.result_for_llm.encode()),
                    **_asked_as(result),
                },
            )
        )

    async def log_ui_feature_access(
        self,
        user: User,
        feature_name: str,
        access_granted: bool,
        required_groups: list[str],
        *,
        conversation_id: str,
        request_id: str,
    ) -> None:
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.UI_FEATURE_ACCESS_CHECK,
                **self._base(user, conversation_id, request_id),
                details={
                    "feature_name": feature_name,
                    "access_granted": access_granted,
                    "required_groups": required_groups,
                },
            )
        )

    async def log_ai_response(
        self,
        user: User,
        *,
        conversation_id: str,
        request_id: str,
        response_text: str,
        tool_call_count: int,
        include_full_text: bool = False,
    ) -> None:
        details: dict[str, Any] = {
            "response_length": len(response_text),
            "tool_call_count": tool_call_count,
        }
        if include_full_text:
            details["response_text"] = response_text
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.AI_RESPONSE_GENERATED,
                **self._base(user, conversation_id, request_id),
                details=details,
            )
        )

    async def log_question(
        self, user: User, *, conversation_id: str, request_id: str, text: str, include_text: bool
    ) -> None:
        """A question asked: who, where (the conversation; its workspace and profile follow
        from it), its length, and its text only when ``include_text``."""
        details: dict[str, Any] = {"length": len(text)}
        if include_text:
            details["text"] = text
        await self._fact(AuditEventType.QUESTION, user, conversation_id, request_id, details)

    async def log_command(
        self, user: User, *, conversation_id: str, request_id: str, command: str
    ) -> None:
        """A command answered without the model (``/usage``, ``/share``...): its first word."""
        details = {"command": command.split(maxsplit=1)[0] if command.strip() else ""}
        await self._fact(AuditEventType.ADMIN_COMMAND, user, conversation_id, request_id, details)

    async def log_refusal(
        self, user: User, *, conversation_id: str, request_id: str, reason: str, budget: bool
    ) -> None:
        """A turn refused (not in the allowed groups, a permission, a quota) or stopped by a
        budget (``budget``), with the sentence the asker was told."""
        kind = AuditEventType.BUDGET_STOP if budget else AuditEventType.REFUSAL
        await self._fact(kind, user, conversation_id, request_id, {"reason": reason})

    async def log_sign_in(self, user: User, *, server: str, workspace: str) -> None:
        """A person signed in to an MCP server (their token is kept; never written here)."""
        details = {"server": server, "workspace": workspace}
        await self._fact(AuditEventType.SIGN_IN, user, "", "sign-in", details)

    async def _fact(
        self,
        kind: AuditEventType,
        user: User,
        conversation_id: str,
        request_id: str,
        details: dict[str, Any],
    ) -> None:
        await self.log_event(
            AuditEvent(
                event_type=kind, **self._base(user, conversation_id, request_id), details=details
            )
        )

    async def log_feedback(self, user: User, feedback: Feedback, *, request_id: str) -> None:
        await self.log_event(
            AuditEvent(
                event_type=AuditEventType.FEEDBACK,
                **self._base(user, feedback.conversation_id, request_id),
                details={
                    "message_id": feedback.message_id,
                    "positive": feedback.positive,
                    "comment": feedback.comment,
                },
            )
        )

    async def log_approval(self, record: ApprovalRecord, *, event: str, user: User | None) -> None:
        """An approval requested (``user``: the asker) or decided (``user``: who decided;
        None for an expiry): the calls and their arguments (secrets redacted), the outcome,
        who and when."""
        arguments, redacted = redact_secrets({call.tool: call.arguments for call in record.calls})
        details: dict[str, Any] = {
            "approval_id": record.id,
            "tools": [call.tool for call in record.calls],
            "arguments": arguments,
            "asker_id": record.asker_id,
            "state": record.state,
            "expires_at": record.expires_at,
        }
        if event == "decided":
            details |= {
                "decided_by_id": record.decided_by_id,
                "decided_at": record.decided_at,
                "note": record.note,
            }
        kind = AuditEventType.APPROVAL_REQUESTED
        if event == "decided":
            kind = AuditEventType.APPROVAL_DECIDED
        who = user or User(id=record.decided_by_id or "threadline", username="(no one)")
        await self.log_event(
            AuditEvent(
                event_type=kind,
                **self._base(who, record.conversation_id, record.turn_id),
                details=details,
                redacted_fields=redacted,
            )
        )


def _asked_as(result: ToolResult) -> dict[str, Any]:
    """Which data identity and profile a query ran as (``agent_core.tools.sql.asked_as``),
    when the tool says so."""
    return {
        key: result.metadata[key] for key in ("data_identity", "profile") if key in result.metadata
    }


class InMemoryAuditLogger(AuditLogger):
    """Keeps events in a list: for tests and the local console."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    async def log_event(self, event: AuditEvent) -> None:
        self.events.append(event)

    def of_type(self, event_type: AuditEventType) -> list[AuditEvent]:
        return [e for e in self.events if e.event_type == event_type]


class LoggingAuditLogger(AuditLogger):
    """Writes each event as one JSON line to the ``threadline.audit`` logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("threadline.audit")

    async def log_event(self, event: AuditEvent) -> None:
        self.logger.info(json.dumps(event.model_dump(mode="json"), sort_keys=True))
