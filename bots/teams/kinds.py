"""The kinds of a Teams turn (``bots.turn_kinds``) and what the Teams bot records in
them: ``TeamsAsked``, a question's activity (the model checked at ingress, every field
kept) and its text; ``TeamsWhere``, where a resumed approval replies.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_serializer

from adapters.teams.activities import ConversationRef
from adapters.teams.payloads import Activity
from bots.turn_kinds import Occurrence, Question, RemovedNotice, ResumedApproval


class TeamsAsked(BaseModel):
    """A message's question: the activity as Teams posted it (the model checked at ingress,
    every field kept) and what it asks.

    >>> asked = TeamsAsked.of(Activity.model_validate({"type": "message",
    ...     "serviceUrl": "https://smba/", "from": {"id": "29:1"}, "conversation": {"id": "19:c"}}),
    ...     "hi")
    >>> asked.payload()["asked"]["activity"]["from"], asked.asked.text
    ({'id': '29:1'}, 'hi')
    """

    activity: Activity
    text: str

    @classmethod
    def of(cls, activity: Activity, text: str) -> Question[TeamsAsked]:
        """The turn kind the queue records for ``activity``, the model as checked (kept as
        is: pydantic does not validate a model instance again)."""
        return Question(asked=cls(activity=activity, text=text))

    @field_serializer("activity")
    def _as_it_came(self, activity: Activity) -> dict[str, Any]:
        return activity.wire()


class TeamsWhere(BaseModel):
    """Where a resumed approval's turn replies: the conversation (``ConversationRef``'s
    record), the approval card's activity, and the asker's context when they asked.

    >>> ref = ConversationRef.from_activity(Activity.model_validate({"type": "message",
    ...     "serviceUrl": "https://smba/", "from": {"id": "29:1"}, "conversation": {"id": "19:c"}}))
    >>> where = TeamsWhere(ref=ref.to_record(), reply_to="m1", context={"user_id": "aad-1"})
    >>> where.reference.conversation_id, where.reference.activity_id
    ('19:c', 'm1')
    """

    ref: dict[str, Any]
    reply_to: str | None = None
    context: dict[str, Any]

    @property
    def reference(self) -> ConversationRef:
        return replace(ConversationRef.from_record(self.ref), activity_id=self.reply_to)


TeamsKind = Annotated[
    Question[TeamsAsked] | ResumedApproval[TeamsWhere] | Occurrence | RemovedNotice,
    Field(discriminator="kind"),
]
"""The kinds of a Teams turn (``bots.turn_kinds``; no workflow steps in Teams)."""
