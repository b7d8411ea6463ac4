"""The shapes of the Bot Framework activities Threadline reads, as pydantic models.

An authenticated activity is still only as well-formed as its sender made it (a channel
bug, a test tool, a replayed body): ``serviceUrl`` missing, ``from`` a string, ``text`` a
number. The converters (``adapters.teams.context``) read activities through these models,
and ``read_activity`` checks a whole activity before the bot acts on it::

    message, invoke, conversationUpdate -> Activity (serviceUrl, from, conversation required)
    any other type                      -> its type only (the bot does not act on it)

Anything else raises ``MalformedPayload`` (a ``ValueError``) naming the field, never its
value. Unknown fields are kept, unchecked and unread (the wire format grows), so the checked
``Activity`` travels on from ingress as it is (into a queued turn, to the converters:
``request_context``, ``ConversationRef.from_activity``), never checked again; ``wire`` gives
its exact JSON where that is what is needed (what a queued turn stores).

>>> read_activity({"type": "typing"}).type
'typing'
>>> read_activity({"type": "message", "serviceUrl": "https://smba/", "from": {"id": "29:1"}})
Traceback (most recent call last):
...
agent_core.errors.MalformedPayload: message: conversation: field required
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from agent_core.errors import MalformedPayload

__all__ = ["MalformedPayload"]  # with the models and the reader below

ACTED_ON = frozenset({"message", "invoke", "conversationUpdate"})
"""Activity types the bot acts on (and so reads in full)."""


class Shape(BaseModel):
    """Base of the activity models: immutable, unknown fields kept as they came, no
    coercion."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True, populate_by_name=True)


class Account(Shape):
    id: str = Field(min_length=1)
    name: str | None = None
    aadObjectId: str | None = None
    tenantId: str | None = None
    """The sender's own tenant, when Teams says (``from.tenantId``)."""


class Conversation(Shape):
    id: str = Field(min_length=1)
    tenantId: str | None = None
    conversationType: str | None = None
    isGroup: bool | None = None


class AnyActivity(Shape):
    """An activity the bot does not act on: its type is all that is read."""

    type: str


class Activity(AnyActivity):
    """A message, invoke or conversation update: who, where, and where to answer."""

    id: str | None = None
    serviceUrl: str = Field(min_length=1)
    sender: Account = Field(alias="from")
    recipient: Account | None = None
    conversation: Conversation
    text: str | None = None
    name: str | None = None
    value: Any = None
    entities: list[Any] | None = None
    channelData: dict[str, Any] | None = None
    membersAdded: list[dict[str, Any]] | None = None
    replyToId: str | None = None

    def wire(self) -> dict[str, Any]:
        """The activity's JSON as it came (every field, read here or not).

        >>> wire = {"type": "message", "serviceUrl": "https://smba/", "from": {"id": "29:1",
        ...         "role": "user"}, "conversation": {"id": "19:c"}, "locale": "en-US"}
        >>> Activity.model_validate(wire).wire() == wire
        True
        """
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def read_activity(body: object) -> AnyActivity:
    """Check an activity (its wire JSON); raises ``MalformedPayload``."""
    if not isinstance(body, Mapping):
        raise MalformedPayload("activity: not an object")
    kind = body.get("type")
    if not isinstance(kind, str):
        raise MalformedPayload("activity: type: not text")
    model = Activity if kind in ACTED_ON else AnyActivity
    try:
        return model.model_validate(body)
    except PydanticError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise MalformedPayload(f"{kind}: {where}: {first['msg'].lower()}") from None
