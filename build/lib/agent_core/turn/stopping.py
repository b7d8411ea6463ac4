"""``settle_after_stop``: a turn the user stopped is committed consistently, not dropped."""

from __future__ import annotations

from agent_core.conversations import Message
from agent_core.turn.deps import TurnDeps
from agent_core.turn.saving import save_conversation
from agent_core.turn.state import TurnState

STOPPED_NOTE = "Stopped by the user before it finished."


async def settle_after_stop(deps: TurnDeps, state: TurnState) -> None:
    """Commit a stopped turn consistently: the question, finished steps, every tool call
    answered, and a note that the user stopped it."""
    conversation = state.conversation
    if conversation is None or state.finished or state.saved:
        return
    if len(conversation.messages) <= state.committed_messages:
        return
    state.close_dangling_tool_calls(STOPPED_NOTE)
    conversation.add_message(Message(role="assistant", content=f"({STOPPED_NOTE})"))
    if deps.config.auto_save_conversations:
        await save_conversation(deps, state)
