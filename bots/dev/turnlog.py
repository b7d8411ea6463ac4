"""One line per turn in the console's terminal: who asked what, how it ended, how long it
took, which tools ran and the tokens spent (when the model reports them).

``TurnRecord`` is filled while the turn runs: ``UsageMeter`` (an ``LlmMiddleware`` the
console adds to the agents it serves) adds each model response's tool calls and token usage
to the record of the turn running in the current task (a ``ContextVar``, so turns running at
once never mix)::

    12:04:31 Ana (user, dm) "Who are our top customers by revenue?" -> done in 1.02 s
             · tools run_sql, visualize_data · tokens 1,204 in / 311 out

>>> record = TurnRecord(who="Ana (user, dm)", text="Hi")
>>> record.tools += ["run_sql"]
>>> record.line("done", 0.5)
'Ana (user, dm) "Hi" -> done in 0.50 s · tools run_sql'
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

from agent_core.extensions.middleware import LlmMiddleware
from agent_core.llm.base import LlmRequest, LlmResponse

QUOTE_CHARS = 60

_current: ContextVar[TurnRecord | None] = ContextVar("threadline_console_turn", default=None)


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


def recording(record: TurnRecord) -> None:
    """Make ``record`` the current task's turn record (call it inside the turn's task)."""
    _current.set(record)


class UsageMeter(LlmMiddleware):
    """Adds each response's tool calls and token usage to the current turn's record.

    >>> import asyncio
    >>> from agent_core.users import User
    >>> record = TurnRecord(who="Ana", text="Hi")
    >>> async def one_call() -> None:
    ...     recording(record)
    ...     response = LlmResponse(content="Hi", usage={"input_tokens": 9, "output_tokens": 2})
    ...     request = LlmRequest(messages=[], user=User(id="a"))
    ...     await UsageMeter().after_llm_response(request, response)
    >>> asyncio.run(one_call())
    >>> record.input_tokens, record.output_tokens
    (9, 2)
    """

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        record = _current.get()
        if record is not None:
            record.tools += [call.name for call in response.tool_calls or []]
            if response.usage:
                record.add_usage(response.usage)
        return response
