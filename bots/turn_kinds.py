"""The kinds of a queued turn: what a turn is, said by its ``kind``, never sniffed from
its payload's keys.

Every listener records one of these (``TurnHost.accept``); ``TurnHost`` reads the payload
once, through the wing's union of the kinds it has, with its own models (``Wing.kinds``:
a ``TypeAdapter`` over ``Annotated[Question[...] | ..., Field(discriminator="kind")]``),
and routes it by kind in one place (``TurnHost._route``) to the wing's route for it::

    kind               a turn that...                          carries
    question           someone asked (a message, a mention, a   ``asked``: the channel's
                       slash command, a message action, a       delivery (``SlackAsked``,
                       home or schedule command: the wing       ``TeamsAsked``,
                       answers a command first)                 ``ConsoleAsked``)
    resumed            continues a turn whose approval was      ``approval_id``, and
                       decided (``bots.approvals``); the agent  ``where`` the channel
                       is sent a ``Resume`` as it is a question answers it
    workflow_step      a Slack Workflow Builder step ran        ``step`` (Slack only)
    scheduled          a schedule's occurrence                  ``Occurrence``
    schedule_removed   a removed schedule's one line            ``RemovedNotice``

Each channel's models and union are in ``bots/<channel>/kinds.py`` (the console's in
``bots.dev.turns``).

The two schedule kinds are made without any channel (the dispatcher, ``threadline
forget``), so they live in ``agent_core.schedules``; the others carry a channel's own
model, the type parameter here. Turns queued by a version before the kinds are read by
``bots.legacy_turns``.

>>> from typing import Annotated
>>> from pydantic import BaseModel, Field, TypeAdapter
>>> class Asked(BaseModel):
...     text: str
>>> kinds = TypeAdapter(Annotated[Question[Asked] | Occurrence, Field(discriminator="kind")])
>>> kinds.validate_python(Question(asked=Asked(text="hi")).payload())
Question[Asked](kind='question', asked=Asked(text='hi'))
>>> kinds.validate_python({"kind": "scheduled", "schedule_id": "s1", "due": 0.0, "at": 0.0,
...                        "dispatched_at": 0.0}).schedule_id
's1'
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.removed import RemovedNotice

__all__ = ["Occurrence", "RemovedNotice"]  # with the kinds below

Asked = TypeVar("Asked", bound=BaseModel)
Where = TypeVar("Where", bound=BaseModel)
Step = TypeVar("Step", bound=BaseModel)


class Kind(BaseModel):
    """Base of the channel-carrying kinds: the payload is the model as JSON, without the
    fields left at their defaults (what a reader restores) but always with its ``kind``
    (what a reader routes by)."""

    def payload(self) -> dict[str, Any]:
        kind = type(self).model_fields["kind"].default
        return {"kind": kind, **self.model_dump(mode="json", by_alias=True, exclude_defaults=True)}


class Question(Kind, Generic[Asked]):
    """Someone asked: ``asked`` is the channel's delivery, read from the signed request.

    >>> class Asked(BaseModel):
    ...     text: str
    >>> Question(asked=Asked(text="hi")).payload()
    {'kind': 'question', 'asked': {'text': 'hi'}}
    """

    kind: Literal["question"] = "question"
    asked: Asked


class ResumedApproval(Kind, Generic[Where]):
    """A decided approval continues the turn that waited for it (decided now, on any
    process); ``where`` is where the channel answers it.

    >>> class Where(BaseModel):
    ...     thread: str
    >>> ResumedApproval(approval_id="a1", where=Where(thread="1.0")).payload()
    {'kind': 'resumed', 'approval_id': 'a1', 'where': {'thread': '1.0'}}
    """

    kind: Literal["resumed"] = "resumed"
    approval_id: str
    where: Where


class StepRun(Kind, Generic[Step]):
    """A workflow's step asked (Slack's Workflow Builder; no other channel has one).

    >>> class Step(BaseModel):
    ...     execution_id: str
    >>> StepRun(step=Step(execution_id="Fx1")).payload()
    {'kind': 'workflow_step', 'step': {'execution_id': 'Fx1'}}
    """

    kind: Literal["workflow_step"] = "workflow_step"
    step: Step


TurnKind = Question[Any] | ResumedApproval[Any] | StepRun[Any] | Occurrence | RemovedNotice
"""Any kind of turn, whatever its channel (what ``TurnHost`` routes)."""
