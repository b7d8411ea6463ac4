"""``Carried``: a model a queued turn's payload carries under a key of its own (a scheduled
occurrence, a removed schedule's notice), written by ``payload()`` and read back by
``from_payload`` (None for a turn of another kind).

>>> class Ping(Carried):
...     KEY = "ping"
...     n: int
>>> Ping.from_payload(Ping(n=1).payload()), Ping.from_payload({"text": "hi"})
(Ping(n=1), None)
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ValidationError


class Carried(BaseModel):
    """See the module; a subclass names its payload ``KEY``."""

    KEY: ClassVar[str]

    def payload(self) -> dict[str, Any]:
        return {self.KEY: self.model_dump(mode="json")}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self | None:
        """The value a turn's payload carries; None for any other turn."""
        found = payload.get(cls.KEY)
        if not isinstance(found, dict):
            return None
        try:
            return cls.model_validate(found)
        except ValidationError:
            return None
