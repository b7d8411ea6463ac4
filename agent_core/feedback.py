"""User feedback on an answer (thumbs up / down from a channel's feedback buttons)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_core.clock import SYSTEM_CLOCK


class Feedback(BaseModel):
    """One person's verdict on one answer.

    ``message_id`` is the channel's id of the rated message (Slack ``ts``, Teams activity id);
    ``turn_id`` the agent turn that answered, when the channel knows it: the memories that
    turn made are marked good or bad.

    >>> Feedback(conversation_id="slack:T1:C1:1.0", message_id="2.0", positive=False).positive
    False
    """

    model_config = ConfigDict(defer_build=True)

    conversation_id: str
    message_id: str
    positive: bool
    comment: str | None = None
    turn_id: str | None = None
    timestamp: float = Field(default_factory=SYSTEM_CLOCK.now)
