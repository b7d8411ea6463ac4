"""One line per turn in the console's terminal: who asked what, how it ended, how long it
took, which tools ran and the tokens spent (when the model reports them).

``TurnRecord`` is filled while the turn runs: ``UsageMeter`` (an ``LlmMiddleware`` the
console adds to the agents it serves) adds each model response's tool calls and token usage
to the record of the turn that asked, found by the request's id (the turn's id: the
console's turns set it), so turns running at once never mix::

    12:04:31 Ana (user, dm) "Who are our top customers by revenue?" -> done in 1.02 s
             · tools run_sql, visualize_data · tokens 1,204 in / 311 out

>>> record = TurnRecord(who="Ana (user, dm)", text="Hi")
>>> record.tools += ["run_sql"]
>>> record.line("done", 0.5)
'Ana (user, dm) "Hi" -> done in 0.50 s · tools run_sql'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_core.extensions.middleware import LlmMiddleware
from agent_core.llm.base import LlmRequest, LlmResponse

QUOTE_CHARS = 60


@dataclass
class TurnRecord:
    """What one turn did, for its log line."""

    who: str
    text: str
    tools: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None

    def add_usage(self, usage: dict[str, int]) -> None:
        for key in ("input_tokens", "output_tokens"):
            if key in usage:
                setattr(self, key, (getattr(self, key) or 0) + int(usage[key]))

    def line(self, outcome: str, seconds: float) -> str:
        text = " ".join(self.text.split())
        quoted = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
        parts = [
            f'{self.who} "{quoted}" -> {outcome} in {seconds:.2f} s'
            if text
            else f"{self.who} (starter view) -> {outcome} in {seconds:.2f} s"
        ]
        if self.tools:
            parts.append(f"tools {', '.join(dict.fromkeys(self.tools))}")
        if self.input_tokens is not None or self.output_tokens is not None:
            parts.append(f"tokens {self.input_tokens or 0:,} in / {self.output_tokens or 0:,} out")
        return " · ".join(parts)


class UsageMeter(LlmMiddleware):
    """Adds each response's tool calls and token usage to the record of its turn
    (``recording(turn_id, record)`` while the turn runs).

    >>> import asyncio
    >>> from agent_core.users import User
    >>> meter, record = UsageMeter(), TurnRecord(who="Ana", text="Hi")
    >>> meter.recording("t1", record)
    >>> response = LlmResponse(content="Hi", usage={"input_tokens": 9, "output_tokens": 2})
    >>> request = LlmRequest(messages=[], user=User(id="a"), metadata={"request_id": "t1"})
    >>> _ = asyncio.run(meter.after_llm_response(request, response))
    >>> record.input_tokens, record.output_tokens
    (9, 2)
    """

    def __init__(self) -> None:
        self._records: dict[str, TurnRecord] = {}

    def recording(self, turn_id: str, record: TurnRecord) -> None:
        """Keep what the requests of turn ``turn_id`` use in ``record``."""
        self._records[turn_id] = record

    def done(self, turn_id: str) -> TurnRecord | None:
        """The turn ended: its record (no longer filled)."""
        return self._records.pop(turn_id, None)

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        record = self._records.get(str(request.metadata.get("request_id") or ""))
        if record is not None:
            record.tools += [call.name for call in response.tool_calls or []]
            if response.usage:
                record.add_usage(response.usage)
        return response
