"""``TurnSnapshot``: the part of a ``TurnState`` that a LangGraph checkpoint holds.

A checkpoint stores data, never live objects. The agent's collaborators (memory,
observability) are re-attached when a turn is restored; the request's headers and cookies
are not stored at all (they may carry credentials), because a resumed turn runs under the
request that resumed it. The conversation is stored as this turn's messages only: the
history before the turn is in the conversation store already, and LangGraph writes a
checkpoint after every step. Snapshots are plain JSON (``model_dump(mode="json")``), so
every checkpointer can store them and loading one never imports a class named in the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agent_core.context import ToolContext
from agent_core.conversations import Conversation, Message
from agent_core.llm.base import LlmResponse
from agent_core.tool_contract import ToolCall, ToolSchema
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.users import User

_LIVE_CONTEXT_FIELDS = frozenset({"agent_memory", "observability_provider"})


class TurnSnapshot(BaseModel):
    """A turn as data: who asked what, the turn's messages, the last LLM response.

    ``conversation`` carries only the messages this turn added (the first
    ``committed_messages`` are in the conversation store). ``tool_context`` is the
    ``ToolContext`` without its live collaborators; metadata values that are not JSON are
    stored as their ``repr``.

    >>> TurnSnapshot(message="hi", request_id="r1").tool_iterations
    0
    """

    message: str
    conversation_id: str | None = None
    request_id: str
    user: User | None = None
    features: list[str] = Field(default_factory=list)
    conversation: Conversation | None = None
    is_new_conversation: bool = False
    committed_messages: int = 0
    tool_context: dict[str, Any] | None = None
    tool_schemas: list[ToolSchema] = Field(default_factory=list)
    system_prompt: str | None = None
    response: LlmResponse | None = None
    tool_iterations: int = 0
    hit_tool_limit: bool = False
    finished: bool = False
    saved: bool = False

    @classmethod
    def of(cls, state: TurnState) -> TurnSnapshot:
        context, conversation = state.tool_context, state.conversation
        if conversation is not None:
            turn_messages = conversation.messages[state.committed_messages :]
            conversation = conversation.model_copy(update={"messages": turn_messages})
        return cls(
            message=state.message,
            conversation_id=state.conversation_id,
            request_id=state.request_id,
            user=state.user,
            features=sorted(state.features),
            conversation=conversation,
            is_new_conversation=state.is_new_conversation,
            committed_messages=state.committed_messages,
            tool_context=None
            if context is None
            else context.model_dump(mode="json", exclude=set(_LIVE_CONTEXT_FIELDS), fallback=repr),
            tool_schemas=state.tool_schemas,
            system_prompt=state.system_prompt,
            response=state.response,
            tool_iterations=state.tool_iterations,
            hit_tool_limit=state.hit_tool_limit,
            finished=state.finished,
            saved=state.saved,
        )

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        return list(self.response.tool_calls or []) if self.response else []

    def restore_into(
        self, state: TurnState, deps: TurnDeps, history: Sequence[Message] = ()
    ) -> None:
        """Make ``state`` this turn again (in place): ``history`` (the stored conversation's
        ``committed_messages`` messages) followed by the turn's own, the agent's collaborators
        (from ``deps``) re-attached. The request context stays the one of the request that
        resumes the turn."""
        copy = self.model_copy(deep=True)
        if copy.conversation is not None:
            copy.conversation.messages = [*history, *copy.conversation.messages]
        state.message, state.conversation_id = copy.message, copy.conversation_id
        state.request_id, state.user = copy.request_id, copy.user
        state.features = frozenset(copy.features)
        state.conversation, state.is_new_conversation = copy.conversation, copy.is_new_conversation
        state.committed_messages = copy.committed_messages
        state.tool_context = (
            None
            if copy.tool_context is None
            else ToolContext.model_validate(
                {
                    **copy.tool_context,
                    "agent_memory": deps.agent_memory,
                    "observability_provider": deps.observability_provider,
                }
            )
        )
        state.tool_schemas, state.system_prompt = copy.tool_schemas, copy.system_prompt
        state.response, state.tool_iterations = copy.response, copy.tool_iterations
        state.hit_tool_limit, state.finished, state.saved = (
            copy.hit_tool_limit,
            copy.finished,
            copy.saved,
        )


def snapshot_of(state: TurnState) -> dict[str, Any]:
    """``state`` as the JSON the graph state (and so a checkpoint) holds."""
    return TurnSnapshot.of(state).model_dump(mode="json", fallback=repr)
