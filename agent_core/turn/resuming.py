"""``Resume`` and ``open_resumed``: a turn resumed after its approval was decided.

A resume is an input to the agent's one entry point, not a second one: the channel sends
``agent.send_message(context, Resume(approval_id))`` where it would send a question
(LangGraph's ``Command(resume=...)`` into the same graph), and the turn opens with
``open_resumed`` instead of ``open_turn``.

The paused turn's asker is resolved again from the request metadata the channel verified
when they asked (their groups as of now), their conversation is loaded, and the round that
waited becomes the turn's response again, so ``act`` runs it with the decision applied
(``agent_core.turn.approving.apply_decision``) and the model goes on. A conversation that
moved on meanwhile (the held calls were answered by a newer turn) runs nothing, and says so.

A Stop while waiting (``cancelled``) answers the held calls and ends the turn as a Stop
does (``settle_cancelled``): the model is not asked again.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.approvals.record import ApprovalRecord
from agent_core.components import ComponentStream, NotificationComponent, UiComponent
from agent_core.conversations import Message
from agent_core.errors import AgentError
from agent_core.llm.base import LlmResponse
from agent_core.turn.approving import APPROVAL_KEY, NOT_RUN, answer_held
from agent_core.turn.deps import TurnDeps
from agent_core.turn.saving import save_conversation
from agent_core.turn.state import TurnState
from agent_core.turn.status import closing_components, working
from agent_core.turn.stopping import STOPPED_NOTE

MOVED_ON = "The decision on {tools} came after the conversation moved on: nothing ran."


@dataclass(frozen=True)
class Resume:
    """Continue the turn that waited for ``approval_id``, now decided: sent to
    ``Agent.send_message`` in place of a message. The turn is the asker's as they asked it
    (the request the channel verified then, kept with the approval), whoever sends it.

    >>> Resume("a1")
    Resume(approval_id='a1')
    """

    approval_id: str


def _waiting_round(record: ApprovalRecord, messages: list[Message]) -> Message | None:
    """The assistant message whose calls wait for ``record``, if they still wait."""
    if not messages or messages[-1].metadata.get(APPROVAL_KEY) != record.id:
        return None
    waiting = messages[-1]
    calls = {call.id for call in waiting.tool_calls or []}
    return waiting if {call.id for call in record.calls} <= calls else None


async def open_resumed(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """Resolve the asker, load their conversation, and restore the round that waited."""
    record = state.approval
    if record is None:
        raise RuntimeError("open_resumed needs the decided approval in state.approval")
    user = state.user = await deps.user_resolver.resolve_user(state.request_context)
    if user.id != record.asker_id:
        raise AgentError("This approval belongs to someone else's question.")
    state.features = deps.config.ui_features.features_for(user)
    conversation = await deps.conversation_store.get_conversation(record.conversation_id, user)
    waiting = _waiting_round(record, conversation.messages if conversation else [])
    if conversation is None or waiting is None:
        state.finished = True
        note = MOVED_ON.format(tools=", ".join(call.tool for call in record.calls))
        yield UiComponent.of(NotificationComponent(message=note, level="info"), note)
        for component in closing_components("idle", "Ready"):
            yield component
        return
    state.conversation = conversation
    # the round that waited is this turn's: a Stop answers its calls, a failure takes it back
    state.committed_messages = len(conversation.messages) - 1
    state.response = LlmResponse(content=waiting.content, tool_calls=waiting.tool_calls)
    if deps.config.include_thinking_indicators:
        yield working()


async def settle_cancelled(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    """A Stop while the turn waited: its calls answered "not run", the turn ended as a Stop
    ends it, committed."""
    record, state.approval = state.approval, None
    if record is not None:
        answer_held(state, record, NOT_RUN["cancelled"])
    state.close_dangling_tool_calls(STOPPED_NOTE)
    state.require_conversation().add_message(Message(role="assistant", content=f"({STOPPED_NOTE})"))
    state.finished = True
    if deps.config.auto_save_conversations:
        await save_conversation(deps, state)
    return closing_components("idle", "Stopped")
