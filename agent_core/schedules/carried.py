"""``Carried``: a kind of queued turn that the schedules make without any channel (a
scheduled occurrence, a removed schedule's notice): the model is the turn's whole payload,
told apart from other kinds by its ``kind`` (the discriminator of the turn kinds in
``bots.turn_kinds``). ``payload()`` writes it; ``from_payload`` reads one back (None for a
turn of another kind: tests and benchmarks reading a queue; the turn host parses every
kind at once).

>>> from typing import Literal
>>> class Ping(Carried):
...     kind: Literal["ping"] = "ping"
...     n: int
>>> Ping(n=1).payload()
{'kind': 'ping', 'n': 1}
>>> Ping.from_payload(Ping(n=1).payload()), Ping.from_payload({"kind": "question"})
(Ping(kind='ping', n=1), None)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ValidationError


class Carried(BaseModel):
    """See the module; a subclass declares ``kind: Literal[...]`` with its one value."""

    def payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Self | None:
        """The value a turn's payload is; None for a turn of any other kind."""
        if payload.get("kind") != cls.model_fields["kind"].default:
            return None
        try:
            return cls.model_validate(payload)
        except ValidationError:
            return None
