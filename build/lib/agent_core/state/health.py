"""``StateHealth``: what a health endpoint reports about the state backend."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Backend = Literal["memory", "sqlite", "redis"]


class StateHealth(BaseModel):
    """The state backend's answer to "can a turn be accepted now?".

    ``ok`` is False while the backend is unreachable (health "red"); ``detail`` says why in
    words an operator can act on; it never contains credentials.

    >>> StateHealth(ok=True, backend="memory").model_dump()["ok"]
    True
    """

    ok: bool
    backend: Backend
    detail: str = "ok"
    latency_ms: float | None = None
