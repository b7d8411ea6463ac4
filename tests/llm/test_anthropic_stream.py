"""Streaming through the real SDK: text deltas as they arrive, tool calls assembled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from agent_core.errors import LlmServerError
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.base import LlmStreamChunk
from agent_core.llm.testing import FakeAnthropic, RawStream, Reply, Text, ToolUse, sse
from agent_core.tool_contract import ToolCall
from tests.llm.support import UNCACHED, ask


async def collect(service: AnthropicLlmService) -> list[LlmStreamChunk]:
    return [chunk async for chunk in service.stream_request(ask())]


async def test_text_deltas_arrive_before_the_rest_is_sent(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    resume = asyncio.Event()
    fake.queue(Reply.text("Hel", "lo", " world", hold_after=1, resume=resume))
    stream = service.stream_request(ask())
    async with asyncio.timeout(5):
        first = await anext(stream)
    assert first.content == "Hel"
    assert fake.sent_events.count("content_block_delta") == 1  # the server is still holding
    resume.set()
    rest = [chunk async for chunk in stream]
    assert [c.content for c in rest[:-1]] == ["lo", " world"]
    assert rest[-1].finish_reason == "end_turn"
    assert rest[-1].usage == {"input_tokens": 12, "output_tokens": 7, **UNCACHED}


async def test_final_chunk_carries_stop_reason_and_usage_only(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply.text("Hi", stop_reason="max_tokens", input_tokens=100, output_tokens=42))
    chunks = await collect(service)
    assert chunks == [
        LlmStreamChunk(content="Hi"),
        LlmStreamChunk(
            finish_reason="max_tokens", usage={"input_tokens": 100, "output_tokens": 42, **UNCACHED}
        ),
    ]


async def test_a_tool_call_is_yielded_once_its_block_stops(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        Reply(
            [
                Text(["Let me ", "check."]),
                ToolUse(
                    "run_sql", {"sql": "SELECT count(*) FROM users"}, id="toolu_1", json_pieces=5
                ),
            ]
        )
    )
    chunks = await collect(service)
    assert [c.content for c in chunks if c.content] == ["Let me ", "check."]
    calls = [c.tool_calls for c in chunks if c.tool_calls]
    assert calls == [
        [ToolCall(id="toolu_1", name="run_sql", arguments={"sql": "SELECT count(*) FROM users"})]
    ]
    assert chunks[-1].finish_reason == "tool_use"


async def test_several_tool_uses_in_one_response_come_in_order(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        Reply(
            [
                ToolUse("weather", {"city": "Oslo"}, id="toolu_a"),
                ToolUse(
                    "weather", {"city": "Lima", "units": ["c", "f"]}, id="toolu_b", json_pieces=9
                ),
                ToolUse("clock", {"tz": "UTC"}, id="toolu_c", json_pieces=1),
            ]
        )
    )
    chunks = await collect(service)
    calls = [call for c in chunks for call in c.tool_calls or ()]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("toolu_a", "weather", {"city": "Oslo"}),
        ("toolu_b", "weather", {"city": "Lima", "units": ["c", "f"]}),
        ("toolu_c", "clock", {"tz": "UTC"}),
    ]


async def test_a_tool_use_without_input_deltas_has_empty_arguments(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply([ToolUse("list_tables", {}, id="toolu_empty")]))
    chunks = await collect(service)
    assert [c.tool_calls for c in chunks if c.tool_calls] == [
        [ToolCall(id="toolu_empty", name="list_tables", arguments={})]
    ]


async def test_pings_and_unknown_events_are_ignored(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    body = b"".join(
        [
            sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "m",
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 3, "output_tokens": 1},
                    },
                },
            ),
            sse("ping", {"type": "ping"}),
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "ok"},
                },
            ),
            sse("future_event", {"type": "future_event", "anything": 1}),
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 2},
                },
            ),
            sse("message_stop", {"type": "message_stop"}),
        ]
    )
    fake.queue(RawStream(body))
    chunks = await collect(service)
    assert chunks == [
        LlmStreamChunk(content="ok"),
        LlmStreamChunk(finish_reason="end_turn", usage={"input_tokens": 3, "output_tokens": 2}),
    ]


async def test_a_stream_that_ends_before_the_message_does_is_an_error(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply.text("partial", truncate=True))
    with pytest.raises(LlmServerError, match="ended before"):
        await collect(service)


async def test_invalid_tool_input_json_is_an_error(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    body = b"".join(
        [
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "t", "name": "x", "input": {}},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": '{"a'},
                },
            ),
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
    )
    fake.queue(RawStream(body))
    with pytest.raises(LlmServerError, match="not valid JSON"):
        await collect(service)


async def test_leaving_a_stream_early_frees_the_service_for_the_next_request(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    """Stop: the consumer closes the stream mid-answer; the next request still works."""
    fake.queue(Reply.text("one", "two", hold_after=1, resume=asyncio.Event()), Reply.text("next"))
    stream = service.stream_request(ask())
    assert isinstance(stream, AsyncGenerator)
    async with asyncio.timeout(5):
        assert (await anext(stream)).content == "one"
        await stream.aclose()
        chunks = await collect(service)
    assert chunks[0].content == "next"
