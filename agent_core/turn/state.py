"""``TurnState``: everything one ``send_message`` call knows and changes, in one object."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_core.components.sources import Source
from agent_core.config import UiFeature
from agent_core.context import ToolContext
from agent_core.conversations import Conversation, Message
from agent_core.llm.base import LlmMessage, LlmResponse
from agent_core.tool_contract import ToolCall, ToolSchema
from agent_core.users import RequestContext, User

if TYPE_CHECKING:
    from agent_core.approvals.record import ApprovalRecord


def as_llm_message(message: Message) -> LlmMessage:
    """A stored message as the LLM sees it."""
    return LlmMessage(
        role=message.role,
        content=message.content,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
    )


@dataclass(slots=True)
class TurnState:
    """Mutable state of one turn; the stages read and update it, the agent drives them.

    ``committed_messages`` is how many messages the stored conversation had when loaded: what
    a failed turn rolls back to.
    """

    request_context: RequestContext
    message: str
    conversation_id: str | None = None
    request_id: str = field(default_factory=lambda: os.urandom(16).hex())
    started: float = field(default_factory=time.perf_counter)
    user: User | None = None
    features: frozenset[str] = frozenset()
    conversation: Conversation | None = None
    is_new_conversation: bool = False
    committed_messages: int = 0
    tool_context: ToolContext | None = None
    tool_schemas: list[ToolSchema] = field(default_factory=list)
    system_prompt: str | None = None
    response: LlmResponse | None = None
    tool_iterations: int = 0
    hit_tool_limit: bool = False
    sources: list[Source] = field(default_factory=list)
    """What the turn's tools cited (``ToolResult.sources``), shown with the final answer."""
    plan_step: str | None = None
    """The step of the model's stated plan in progress (``PlanTool``): the tool calls made
    meanwhile are shown under it."""
    finished: bool = False
    """A stage answered the turn early (starter UI, workflow command)."""
    awaiting: ApprovalRecord | None = None
    """The approval this turn now waits for (``agent_core.approvals.gate.hold``): the turn
    ends without running the round, "waiting for approval"."""
    approval: ApprovalRecord | None = None
    """The decided approval this turn resumes with (``agent_core.turn.resuming``)."""
    resumed_from: str | None = None
    """The approval this turn resumed after (its question was committed before)."""
    saved: bool = False
    converted: dict[int, tuple[Message, LlmMessage]] = field(default_factory=dict)
    """Each stored message as the LLM sees it, converted once per turn (by ``id``; the
    message is kept so its id cannot be reused within the turn)."""

    @classmethod
    def start(
        cls, request_context: RequestContext, message: str, conversation_id: str | None
    ) -> TurnState:
        """A new turn; its id is the channel's own turn id when it gave one (so feedback on
        the answer can name the turn), else a random one."""
        turn_id = request_context.metadata.get("turn_id")
        if isinstance(turn_id, str) and turn_id:
            return cls(request_context, message, conversation_id, request_id=turn_id)
        return cls(request_context, message, conversation_id)

    @classmethod
    def resumed(cls, record: ApprovalRecord) -> TurnState:
        """The turn that waited for ``record``, resumed: the asker's request as the channel
        verified it, the same conversation, question and turn id."""
        state = cls(
            RequestContext(metadata=dict(record.request)),
            record.question,
            record.conversation_id,
            request_id=record.turn_id,
        )
        state.approval, state.resumed_from = record, record.id
        return state

    def can(self, feature: UiFeature | str) -> bool:
        name = feature.value if isinstance(feature, UiFeature) else feature
        return name in self.features

    def require_user(self) -> User:
        if self.user is None:
            raise RuntimeError("stage ran before the user was resolved")
        return self.user

    def require_conversation(self) -> Conversation:
        if self.conversation is None:
            raise RuntimeError("stage ran before the conversation was loaded")
        return self.conversation

    def require_tool_context(self) -> ToolContext:
        if self.tool_context is None:
            raise RuntimeError("stage ran before the tool context was built")
        return self.tool_context

    def llm_message(self, message: Message) -> LlmMessage:
        """``message`` as the LLM sees it: converted on the turn's first LLM call, reused
        by the next ones (messages are immutable)."""
        known = self.converted.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        converted = as_llm_message(message)
        self.converted[id(message)] = (message, converted)
        return converted

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        return list(self.response.tool_calls or []) if self.response else []

    def close_dangling_tool_calls(self, reason: str) -> None:
        """Answer every assistant tool call that has no result yet, so history stays valid."""
        conversation = self.conversation
        if conversation is None:
            return
        answered = {m.tool_call_id for m in conversation.messages if m.role == "tool"}
        for message in conversation.messages[self.committed_messages :]:
            for call in message.tool_calls or []:
                if call.id not in answered:
                    conversation.add_message(
                        Message(role="tool", content=reason, tool_call_id=call.id)
                    )
