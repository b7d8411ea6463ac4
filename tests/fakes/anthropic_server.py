"""A fake Anthropic Messages API on 127.0.0.1, speaking the real wire format.

Point the real ``anthropic`` SDK at ``fake.base_url``. Each ``POST /v1/messages`` takes the
next scripted entry: a ``Reply`` (text and tool-use blocks, sent as JSON or as the SSE event
stream depending on the request's ``stream`` flag), a ``StatusError`` (status, error body,
headers) or a ``RawStream`` (bytes sent verbatim as ``text/event-stream``). Every request is
recorded, so tests assert on the exact body the client sent.

    async with FakeAnthropic() as fake:
        fake.queue(Reply.text("Hel", "lo"), StatusError(429, headers={"retry-after": "1"}))
        ...
        assert fake.requests[0].body["model"] == "claude-sonnet-5-5"

``Reply(hold_after=n, resume=event)`` stops streaming after the n-th content delta until the
test sets ``event``, so a test can prove it received text before the rest was sent; a
``resume`` that is never set makes a stalled stream. ``close`` releases every held stream.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

_ids = itertools.count(1)

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


@dataclass
class Text:
    """A text block, streamed as one ``text_delta`` per piece."""

    deltas: list[str]

    @property
    def text(self) -> str:
        return "".join(self.deltas)


@dataclass
class ToolUse:
    """A tool_use block; its JSON input is streamed in ``json_pieces`` ``input_json_delta``s
    (none when the input is empty, as the real API does)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"toolu_{next(_ids):04d}")
    json_pieces: int = 3


@dataclass
class Reply:
    """One scripted model answer; see the module docstring for ``hold_after``/``resume``.

    ``error_after`` sends an SSE ``error`` event (``error_type``) after that many content
    deltas and ends the stream; ``truncate`` ends the stream before ``message_delta``.
    """

    blocks: list[Text | ToolUse]
    stop_reason: str | None = None
    input_tokens: int = 12
    output_tokens: int = 7
    hold_after: int | None = None
    resume: asyncio.Event | None = None
    error_after: int | None = None
    error_type: str = "overloaded_error"
    truncate: bool = False

    @classmethod
    def text(cls, *deltas: str, **options: Any) -> Reply:
        return cls([Text(list(deltas))], **options)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> Reply:
        return cls([ToolUse(name, arguments or {})], **options)

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"

    def message(self, model: str) -> dict[str, Any]:
        """The non-streaming response body."""
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            if isinstance(block, Text):
                content.append({"type": "text", "text": block.text})
            else:
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
        return _message(model, content, self.final_stop_reason, self._usage())

    def events(self, model: str) -> list[tuple[str, dict[str, Any]]]:
        """The SSE events of the streamed response, in order."""
        usage = {"input_tokens": self.input_tokens, "output_tokens": 1}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start",
                               "message": _message(model, [], None, usage)}),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(self.blocks):
            events += _block_events(index, block)
        if self.truncate:
            return events
        events.append(("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self.final_stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": self.output_tokens},
        }))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _usage(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


def _message(
    model: str, content: list[dict[str, Any]], stop_reason: str | None, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids):06d}", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage,
    }


def _block_events(index: int, block: Text | ToolUse) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(block, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in block.deltas]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece}
                  for piece in _split(json.dumps(block.input) if block.input else "",
                                      block.json_pieces)]
    events = [("content_block_start",
               {"type": "content_block_start", "index": index, "content_block": start})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": delta}) for delta in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(event: str, data: dict[str, Any] | str) -> bytes:
    """One server-sent event, as the API frames it."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()


def render_stream(reply: Reply, model: str = "claude-test") -> bytes:
    """The whole SSE body of ``reply`` (for ``RawStream`` and benchmarks)."""
    return b"".join(sse(name, data) for name, data in reply.events(model))


@dataclass
class StatusError:
    """An HTTP error response with the API's error body and optional headers."""

    status: int
    error_type: str = "api_error"
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawStream:
    """Bytes sent verbatim as a 200 ``text/event-stream`` body (malformed streams, benches)."""

    body: bytes


Entry = Reply | StatusError | RawStream


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)


class FakeAnthropic:
    """The fake server; ``queue`` responses, read ``requests``. See the module docstring."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.sent_events: list[str] = []
        self._script: list[Entry] = []
        self._held: list[asyncio.Event] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def queue(self, *entries: Entry) -> None:
        self._script.extend(entries)

    @property
    def pending(self) -> int:
        """Scripted entries not yet served."""
        return len(self._script)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"

    async def close(self) -> None:
        for event in self._held:
            event.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeAnthropic:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body))
        if not self._script:
            return _error(StatusError(500, message="FakeAnthropic: no scripted response left"))
        entry = self._script.pop(0)
        if isinstance(entry, StatusError):
            return _error(entry)
        if isinstance(entry, RawStream):
            return web.Response(body=entry.body, headers=SSE_HEADERS)
        if not body.get("stream"):
            return web.json_response(entry.message(body.get("model", "")))
        return await self._stream(request, entry, body.get("model", ""))

    async def _stream(self, request: web.Request, reply: Reply, model: str) -> web.StreamResponse:
        response = web.StreamResponse(headers=SSE_HEADERS)
        await response.prepare(request)
        deltas = 0
        for name, data in reply.events(model):
            await response.write(sse(name, data))
            self.sent_events.append(name)
            if name != "content_block_delta":
                continue
            deltas += 1
            if deltas == reply.error_after:
                error = {"type": reply.error_type, "message": "scripted stream error"}
                await response.write(sse("error", {"type": "error", "error": error}))
                break
            if deltas == reply.hold_after and reply.resume is not None:
                self._held.append(reply.resume)
                await reply.resume.wait()
        await response.write_eof()
        return response


def _error(entry: StatusError) -> web.Response:
    body = {"type": "error", "error": {"type": entry.error_type, "message": entry.message}}
    return web.json_response(body, status=entry.status, headers=entry.headers)
