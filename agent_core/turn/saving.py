"""``save_conversation``: write the turn's conversation to the store (traced), and note it."""

from __future__ import annotations

from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState


async def save_conversation(deps: TurnDeps, state: TurnState) -> None:
    conversation = state.require_conversation()
    async with deps.tracer.span(
        "agent.conversation.save",
        metric="agent.conversation.save.duration",
        conversation_id=conversation.id,
        message_count=len(conversation.messages),
    ):
        await deps.conversation_store.update_conversation(conversation)
    state.saved = True
