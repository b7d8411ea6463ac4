"""A fake Anthropic Messages API on 127.0.0.1, speaking the real wire format.

Test your agent against Claude's protocol without a key or a network: point the real
``anthropic`` SDK (or ``AnthropicLlmService``) at ``fake.base_url``. Each
``POST /v1/messages`` takes the next scripted entry: a ``Reply`` (text and tool-use blocks,
sent as JSON or as the SSE event stream depending on the request's ``stream`` flag), a
``StatusError`` (status, error body, headers), a ``RawStream`` (bytes sent verbatim as
``text/event-stream``), a ``Hang`` (nothing at all until released: a hung API) or a ``Drop``
(the connection closed without an answer: a reset). Every request is recorded, so tests
assert on the exact body the client sent.

>>> import asyncio
>>> from agent_core.llm.anthropic import AnthropicLlmService
>>> from agent_core.llm.base import LlmMessage, LlmRequest
>>> from agent_core.users import User
>>> async def demo():
...     async with FakeAnthropic() as fake:
...         fake.queue(Reply.text("Hel", "lo"))
...         async with AnthropicLlmService(
...             model="claude-test", api_key="sk-test", base_url=fake.base_url
...         ) as llm:
...             hello = LlmRequest(messages=[LlmMessage(role="user", content="Hi")],
...                                user=User(id="u1"))
...             answer = await llm.send_request(hello)
...         return answer.content, fake.requests[0].body["model"]
>>> asyncio.run(demo())
('Hello', 'claude-test')

``Reply(first_token_after=0.8, delta_interval=0.05)`` paces a streamed answer as the real API
does: the first content delta after that many seconds, each further one after the interval
(``Reply.paced`` splits a text into deltas at a tokens-per-second speed); a benchmark's model
then has Claude's latency without Claude.

``Reply(hold_after=n, resume=event)`` stops streaming after the n-th content delta until the
test sets ``event``, so a test can prove it received text before the rest was sent; a
``resume`` that is never set makes a stalled stream. ``close`` releases every held stream.

Usage is reported as the API reports it: the reply's ``input_tokens`` / ``output_tokens``,
plus ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` as ``PromptCache``
estimates them from the request's ``cache_control`` breakpoints (0 without breakpoints, or
for a prompt shorter than the API's minimum cacheable length).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Self

from agent_core.llm.loopback import HttpRequest, HttpResponse, LoopbackServer

_ids = itertools.count(1)
_request_ids = itertools.count(1)

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class CacheUsage:
    """The prompt-cache counts of one response (``cache_creation`` / ``cache_read``)."""

    creation: int = 0
    read: int = 0


NO_CACHE = CacheUsage()


class PromptCache:
    """Prompt caching as the Messages API accounts it, with tokens estimated as characters / 4.

    The prompt is read in the API's order (tools, system, messages), block by block. A block
    carrying ``cache_control`` is a breakpoint; as with the API, a breakpoint whose prefix is
    shorter than ``minimum_tokens`` (1,024, the Sonnet and Opus minimum) caches nothing. The
    prefix up to the last breakpoint is counted as ``cache_read`` for its longest part
    already written by an earlier request (same model), and as ``cache_creation`` for the
    rest; then every breakpoint's prefix is written. No expiry; the lookback is unbounded
    (the API's is 20 blocks).

    >>> cache = PromptCache()
    >>> body = {"model": "m", "system": [
    ...     {"type": "text", "text": "x" * 4400, "cache_control": {"type": "ephemeral"}}],
    ...     "messages": [{"role": "user", "content": "hi"}]}
    >>> cache.usage(body), cache.usage(body)
    (CacheUsage(creation=1100, read=0), CacheUsage(creation=0, read=1100))
    >>> short = {"model": "m", "system": [
    ...     {"type": "text", "text": "x" * 400, "cache_control": {"type": "ephemeral"}}]}
    >>> cache.usage(short)  # under the minimum: not cached
    CacheUsage(creation=0, read=0)
    """

    def __init__(self, *, minimum_tokens: int = 1024) -> None:
        self.minimum_tokens = minimum_tokens
        self._written: set[str] = set()

    def usage(self, body: dict[str, Any]) -> CacheUsage:
        """The counts for one request, which then writes its breakpoints to the cache."""
        blocks = list(_prompt_blocks(body))
        keys, tokens = [], []
        digest, characters = hashlib.sha256(str(body.get("model")).encode()), 0
        for text, _, size in blocks:
            digest.update(text.encode())
            keys.append(digest.hexdigest())
            characters += size
            tokens.append(-(-characters // CHARS_PER_TOKEN))
        breakpoints = [
            i
            for i, (_, marked, _) in enumerate(blocks)
            if marked and tokens[i] >= self.minimum_tokens
        ]
        if not breakpoints:
            return NO_CACHE
        keys, tokens = keys[: breakpoints[-1] + 1], tokens[: breakpoints[-1] + 1]
        hits = [i for i, key in enumerate(keys) if key in self._written]
        read = tokens[hits[-1]] if hits else 0
        self._written.update(keys[i] for i in breakpoints)
        return CacheUsage(creation=tokens[-1] - read, read=read)


def _prompt_blocks(body: dict[str, Any]) -> Iterator[tuple[str, bool, int]]:
    """``(identity, has_cache_control, characters)`` of each block, in the API's order."""
    for tool in body.get("tools") or []:
        yield _block("tool", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        yield _block("system", block)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            yield _block(str(message.get("role")), block)


def _block(role: str, block: dict[str, Any]) -> tuple[str, bool, int]:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    identity = json.dumps([role, plain], sort_keys=True, separators=(",", ":"))
    text = plain.get("text")
    size = len(text) if isinstance(text, str) else len(json.dumps(plain))
    return identity + "\n", "cache_control" in block, size


@dataclass
class Text:
    """A text block, streamed as one ``text_delta`` per piece.

    >>> Text(["Hel", "lo"]).text
    'Hello'
    """

    deltas: list[str]

    @property
    def text(self) -> str:
        return "".join(self.deltas)


@dataclass
class ToolUse:
    """A tool_use block; its JSON input is streamed in ``json_pieces`` ``input_json_delta``s
    (none when the input is empty, as the real API does).

    >>> ToolUse("run_sql", {"sql": "SELECT 1"}, id="toolu_1").name
    'run_sql'
    """

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"toolu_{next(_ids):04d}")
    json_pieces: int = 3


@dataclass
class Reply:
    """One scripted model answer; see the module docstring for ``hold_after``/``resume``.

    ``error_after`` sends an SSE ``error`` event (``error_type``) after that many content
    deltas and ends the stream; ``truncate`` ends the stream before ``message_delta``.

    >>> Reply.tool("run_sql", {"sql": "SELECT 1"}).final_stop_reason
    'tool_use'
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
    first_token_after: float = 0.0
    """Seconds from the request to the first content delta (the model's time to first token)."""
    delta_interval: float = 0.0
    """Seconds between two content deltas (the model's streaming speed)."""

    @classmethod
    def text(cls, *deltas: str, **options: Any) -> Reply:
        return cls([Text(list(deltas))], **options)

    @classmethod
    def paced(
        cls,
        text: str,
        *,
        first_token_after: float,
        tokens_per_second: float,
        tokens_per_delta: int = 3,
        **options: Any,
    ) -> Reply:
        """``text`` streamed as a model streams it: deltas of ``tokens_per_delta`` tokens (4
        characters each), the first after ``first_token_after`` seconds.

        >>> reply = Reply.paced("x" * 120, first_token_after=0.8, tokens_per_second=60)
        >>> len(reply.blocks[0].deltas), reply.delta_interval, reply.output_tokens
        (10, 0.05, 30)
        """
        size = tokens_per_delta * CHARS_PER_TOKEN
        deltas = [text[i : i + size] for i in range(0, len(text), size)]
        return cls(
            [Text(deltas)],
            first_token_after=first_token_after,
            delta_interval=tokens_per_delta / tokens_per_second,
            output_tokens=-(-len(text) // CHARS_PER_TOKEN),
            **options,
        )

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> Reply:
        return cls([ToolUse(name, arguments or {})], **options)

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"

    def message(self, model: str, cache: CacheUsage = NO_CACHE) -> dict[str, Any]:
        """The non-streaming response body."""
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            if isinstance(block, Text):
                content.append({"type": "text", "text": block.text})
            else:
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
        usage = self._usage(self.output_tokens, cache)
        return _message(model, content, self.final_stop_reason, usage)

    def events(self, model: str, cache: CacheUsage = NO_CACHE) -> list[tuple[str, dict[str, Any]]]:
        """The SSE events of the streamed response, in order."""
        usage = self._usage(1, cache)
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {"type": "message_start", "message": _message(model, [], None, usage)},
            ),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(self.blocks):
            events += _block_events(index, block)
        if self.truncate:
            return events
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self.final_stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": self.output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _usage(self, output_tokens: int, cache: CacheUsage) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": cache.creation,
            "cache_read_input_tokens": cache.read,
            "output_tokens": output_tokens,
        }


def _message(
    model: str, content: list[dict[str, Any]], stop_reason: str | None, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _block_events(index: int, block: Text | ToolUse) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(block, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in block.deltas]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in _split(json.dumps(block.input) if block.input else "", block.json_pieces)
        ]
    events = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        for delta in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(event: str, data: dict[str, Any] | str) -> bytes:
    """One server-sent event, as the API frames it.

    >>> sse("ping", {"type": "ping"})
    b'event: ping\\ndata: {"type":"ping"}\\n\\n'
    """
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()


def render_stream(reply: Reply, model: str = "claude-test") -> bytes:
    """The whole SSE body of ``reply`` (for ``RawStream`` and benchmarks)."""
    return b"".join(sse(name, data) for name, data in reply.events(model))


@dataclass
class StatusError:
    """An HTTP error response with the API's error body and optional headers.

    >>> StatusError(429, "rate_limit_error", headers={"retry-after": "1"}).status
    429
    """

    status: int
    error_type: str = "api_error"
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawStream:
    """Bytes sent verbatim as a 200 ``text/event-stream`` body (malformed streams, benches).

    >>> RawStream(render_stream(Reply.text("Hi"))).body.startswith(b"event: message_start")
    True
    """

    body: bytes


@dataclass
class Hang:
    """Accept the request and answer nothing until ``release`` is set (or the fake closes),
    then drop the connection: an API that hangs.

    >>> Hang().release.is_set()
    False
    """

    release: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Drop:
    """Close the connection without an answer, as a reset connection does.

    >>> Drop()
    Drop()
    """


Entry = Reply | StatusError | RawStream | Hang | Drop


@dataclass
class RecordedRequest:
    """A request the fake received: its path, headers (as the client spelled them), JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)


class FakeAnthropic:
    """The fake server: ``queue`` responses, read ``requests``; see the module docstring.

    ``cache`` is the ``PromptCache`` the usage figures come from (one per fake). The cloud
    platforms' fakes (``testing_bedrock``, ``testing_vertex``, ``testing_foundry``) are
    subclasses: each overrides how a request is routed and authorised, and how an answer,
    a stream event and an error are framed on its wire; the scripting is this one.
    """

    platform = "anthropic"
    stream_content_type = "text/event-stream"

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.model_lookups: list[RecordedRequest] = []
        self.refused: list[RecordedRequest] = []
        """Requests refused before the script was read (authentication, unknown path)."""
        self.api_keys: set[str] | None = None
        """Keys the API accepts, in ``x-api-key`` or as a bearer token (``None``: any)."""
        self.models: set[str] | None = None
        """The models this API serves (``None``: any); another is refused in its words."""
        self.sent_events: list[str] = []
        self.cache = PromptCache()
        self._script: list[Entry] = []
        self._held: list[asyncio.Event] = []
        self._server = LoopbackServer(self._handle)
        self.base_url = ""

    def queue(self, *entries: Entry) -> None:
        self._script.extend(entries)

    @property
    def pending(self) -> int:
        """Scripted entries not yet served."""
        return len(self._script)

    async def start(self) -> None:
        await self._server.start()
        self.base_url = self._server.base_url

    async def close(self) -> None:
        for event in self._held:
            event.set()
        await self._server.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what a platform overrides --------------------------------------------------------

    def route(self, request: HttpRequest, body: dict[str, Any]) -> tuple[str, bool] | None:
        """``(model, streamed)`` of a Messages call on this platform, else ``None`` (404)."""
        if (request.method, request.path) != ("POST", "/v1/messages"):
            return None
        return str(body.get("model", "")), bool(body.get("stream"))

    def authorize(self, request: HttpRequest) -> StatusError | None:
        """The error for a request whose credentials this platform refuses (``None``: ok)."""
        key = request.header("x-api-key") or request.header("authorization").removeprefix("Bearer ")
        if self.api_keys is not None and key not in self.api_keys:
            return StatusError(401, "authentication_error", "invalid x-api-key")
        return None

    def model_refusal(self, model: str) -> StatusError:
        """How this platform refuses a model it does not serve."""
        return StatusError(404, "not_found_error", f"model: {model}")

    def frame(self, name: str, data: dict[str, Any]) -> bytes:
        """One stream event as this platform sends it."""
        return sse(name, data)

    def error_event(self, error_type: str, message: str) -> bytes:
        """An error in the middle of a stream, as this platform sends it."""
        return sse("error", {"type": "error", "error": {"type": error_type, "message": message}})

    def error_body(self, entry: StatusError) -> tuple[dict[str, str], bytes]:
        """Extra headers and the body of an HTTP error on this platform."""
        body = {"type": "error", "error": {"type": entry.error_type, "message": entry.message}}
        return {}, json.dumps(body).encode()

    async def special(self, request: HttpRequest, response: HttpResponse) -> bool:
        """Answer a request that is not a Messages call (a model lookup); True when done."""
        if request.method == "GET" and request.path.startswith("/v1/models/"):
            await self._model(request, response)
            return True
        return False

    # -- serving --------------------------------------------------------------------------

    async def send_error(self, response: HttpResponse, entry: StatusError) -> None:
        headers, body = self.error_body(entry)
        await response.send(entry.status, _json_headers({**headers, **entry.headers}), body)

    async def _handle(self, request: HttpRequest, response: HttpResponse) -> None:
        if await self.special(request, response):
            return None
        if (refusal := self.authorize(request)) is not None:
            self.refused.append(RecordedRequest(request.path, dict(request.headers), {}))
            return await self.send_error(response, refusal)
        body = _json_object(request.body)
        if (route := self.route(request, body or {})) is None:
            error = StatusError(404, "not_found_error", f"{request.method} {request.path}")
            return await self.send_error(response, error)
        if body is None:
            error = StatusError(400, "invalid_request_error", "not JSON")
            return await self.send_error(response, error)
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body))
        if self.models is not None and route[0] not in self.models:
            return await self.send_error(response, self.model_refusal(route[0]))
        if not self._script:
            error = StatusError(500, message=f"{type(self).__name__}: no scripted response left")
            return await self.send_error(response, error)
        await self._answer(response, self._script.pop(0), body, *route)

    async def _answer(
        self, response: HttpResponse, entry: Entry, body: dict[str, Any], model: str, stream: bool
    ) -> None:
        match entry:
            case StatusError():
                await self.send_error(response, entry)
            case RawStream(body=raw):
                await response.send(200, self._stream_headers(), raw)
            case Hang(release=release):
                self._held.append(release)
                await release.wait()
                raise ConnectionResetError(f"{type(self).__name__}: a hung request, released")
            case Drop():
                raise ConnectionResetError(f"{type(self).__name__}: a scripted reset")
            case Reply() if stream:
                await self._stream(
                    response, entry, model, self.cache.usage({**body, "model": model})
                )
            case Reply():
                usage = self.cache.usage({**body, "model": model})
                message = json.dumps(entry.message(model, usage)).encode()
                await response.send(200, _json_headers(), message)

    def _stream_headers(self) -> dict[str, str]:
        return {**SSE_HEADERS, "Content-Type": self.stream_content_type}

    async def _model(self, request: HttpRequest, response: HttpResponse) -> None:
        """``GET /v1/models/{id}``: how a key is checked without spending tokens."""
        self.model_lookups.append(RecordedRequest(request.path, dict(request.headers), {}))
        key = request.header("x-api-key") or request.header("authorization").removeprefix("Bearer ")
        if self.api_keys is not None and key not in self.api_keys:
            error = StatusError(401, "authentication_error", "invalid x-api-key")
            return await self.send_error(response, error)
        model = request.path.removeprefix("/v1/models/")
        body = {
            "type": "model",
            "id": model,
            "display_name": model,
            "created_at": "2026-01-01T00:00:00Z",
        }
        await response.send(200, _json_headers(), json.dumps(body).encode())

    async def _stream(
        self, response: HttpResponse, reply: Reply, model: str, cache: CacheUsage
    ) -> None:
        await response.start(200, self._stream_headers())
        deltas = 0
        for name, data in reply.events(model, cache):
            pause = reply.delta_interval if deltas else reply.first_token_after
            if name == "content_block_delta" and pause:  # the model's own pace, if it has one
                await asyncio.sleep(pause)
            await response.write(self.frame(name, data))
            self.sent_events.append(name)
            if name != "content_block_delta":
                continue
            deltas += 1
            if deltas == reply.error_after:
                await response.write(self.error_event(reply.error_type, "scripted stream error"))
                break
            if deltas == reply.hold_after and reply.resume is not None:
                self._held.append(reply.resume)
                await reply.resume.wait()


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _json_headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "request-id": f"req_{next(_request_ids):06d}",
        **(extra or {}),
    }
