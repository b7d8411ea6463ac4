"""``ScriptedLlmService``: a deterministic LLM for tests, demos and your own test suites.

Each request consumes the next script entry: a string (a text answer), a
``ScriptedResponse`` (text and/or tool calls, latency, chunking), an exception (raised), or a
callable that receives the ``LlmRequest`` and returns any of those. ``requests`` records what
the agent sent, for assertions.

>>> import asyncio
>>> from agent_core.llm.base import LlmRequest
>>> from agent_core.users import User
>>> llm = ScriptedLlmService(["Hello!"])
>>> request = LlmRequest(messages=[], user=User(id="u"))
>>> asyncio.run(llm.send_request(request)).content
'Hello!'
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.errors import LlmBadRequestError
from agent_core.llm.base import LlmRequest, LlmResponse, LlmService, LlmStreamChunk
from agent_core.tool_contract import ToolCall, ToolSchema

_call_ids = itertools.count(1)


class ScriptedResponse(BaseModel):
    """One scripted answer.

    ``chunks`` fixes how ``text`` is streamed (default: word by word); ``latency`` is waited
    before the first chunk, ``chunk_delay`` between chunks.
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    chunks: list[str] | None = None
    latency: float = 0.0
    chunk_delay: float = 0.0
    usage: dict[str, int] | None = None

    @classmethod
    def tool(
        cls, name: str, arguments: dict[str, Any] | None = None, *, text: str = "", **kw: Any
    ) -> ScriptedResponse:
        """A response calling one tool: ``ScriptedResponse.tool("run_sql", {"sql": "..."})``."""
        call = ToolCall(id=f"call_{next(_call_ids)}", name=name, arguments=arguments or {})
        return cls(text=text, tool_calls=[call], **kw)

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]], text: str = "") -> ScriptedResponse:
        """A response calling several tools at once."""
        return cls(
            text=text,
            tool_calls=[
                ToolCall(id=f"call_{next(_call_ids)}", name=n, arguments=a) for n, a in calls
            ],
        )

    def text_chunks(self) -> list[str]:
        if self.chunks is not None:
            return self.chunks
        if not self.text:
            return []
        words = self.text.split(" ")
        return [w if i == len(words) - 1 else f"{w} " for i, w in enumerate(words)]


ScriptEntry = str | ScriptedResponse | BaseException | Callable[[LlmRequest], Any]


class ScriptedLlmService(LlmService):
    """Plays a script of responses; see the module docstring.

    ``latency`` (seconds) applies to every response that does not set its own.
    ``then`` answers every request after the script runs out (a callable or entry); without
    it, running out raises ``LlmBadRequestError`` so a test notices. ``requests`` keeps the
    newest ``keep_requests`` requests.
    """

    def __init__(
        self,
        script: Iterable[ScriptEntry] = (),
        *,
        latency: float = 0.0,
        then: ScriptEntry | None = None,
        name: str = "scripted",
        keep_requests: int = 1000,
    ) -> None:
        self._script = list(script)
        self._position = 0
        self.latency = latency
        self.then = then
        self.name = name
        self.requests: list[LlmRequest] = []
        """The requests received, oldest first: the newest ``keep_requests`` of them (a
        scripted model serving a long-running bot stays within bounded memory)."""
        self.keep_requests = keep_requests
        self.validated_tools: list[list[ToolSchema]] = []

    @property
    def model_name(self) -> str:
        return self.name

    def add(self, *entries: ScriptEntry) -> None:
        """Append entries to the script."""
        self._script.extend(entries)

    def _next(self, request: LlmRequest) -> ScriptedResponse:
        self.requests.append(request)
        if len(self.requests) > self.keep_requests:
            del self.requests[: len(self.requests) - self.keep_requests]
        if self._position < len(self._script):
            entry = self._script[self._position]
            self._position += 1
        elif self.then is not None:
            entry = self.then
        else:
            raise LlmBadRequestError(
                f"ScriptedLlmService script exhausted after {self._position} responses"
            )
        if callable(entry) and not isinstance(entry, BaseException | ScriptedResponse):
            entry = entry(request)
        if isinstance(entry, BaseException):
            raise entry
        if isinstance(entry, str):
            return ScriptedResponse(text=entry)
        if isinstance(entry, ScriptedResponse):
            return entry
        raise TypeError(f"unsupported script entry: {entry!r}")

    async def _wait(self, scripted: ScriptedResponse) -> None:
        delay = scripted.latency or self.latency
        if delay:
            await asyncio.sleep(delay)

    async def send_request(self, request: LlmRequest) -> LlmResponse:
        scripted = self._next(request)
        await self._wait(scripted)
        return LlmResponse(
            content=scripted.text or None,
            tool_calls=list(scripted.tool_calls) or None,
            finish_reason="tool_use" if scripted.tool_calls else "end_turn",
            usage=scripted.usage,
        )

    async def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]:
        scripted = self._next(request)
        await self._wait(scripted)
        for index, chunk in enumerate(scripted.text_chunks()):
            if index and scripted.chunk_delay:
                await asyncio.sleep(scripted.chunk_delay)
            yield LlmStreamChunk(content=chunk)
        if scripted.tool_calls:
            yield LlmStreamChunk(tool_calls=list(scripted.tool_calls))
        yield LlmStreamChunk(
            finish_reason="tool_use" if scripted.tool_calls else "end_turn", usage=scripted.usage
        )

    async def validate_tools(self, tools: list[ToolSchema]) -> list[str]:
        self.validated_tools.append(list(tools))
        return []
